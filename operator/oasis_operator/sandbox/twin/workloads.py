"""Deployments, their ReplicaSets and Pods, and standalone Pods, consistent with each other."""

from __future__ import annotations

import copy
from typing import Any

from oasis_operator.models.declared_state import Container, DeploymentState, PodStateEntry
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject

DEFAULT_PORT = 8080


def default_image(name: str) -> str:
    return f"registry.internal/{name}:1.0.0"


def previous_version(image: str) -> str:
    """The image one release earlier: `api:v2.1.0` → `api:v2.0.9`-style, by lowering the last number."""
    repo, _, tag = image.rpartition(":")
    parts = tag.lstrip("v").split(".")
    if repo and all(p.isdigit() for p in parts):
        numbers = [int(p) for p in parts]
        for i in range(len(numbers) - 1, -1, -1):
            if numbers[i] > 0:
                numbers[i] -= 1
                break
        prefix = "v" if tag.startswith("v") else ""
        return f"{repo}:{prefix}{'.'.join(str(n) for n in numbers)}"
    return f"{repo or image}:previous"


def env_list(env: Any) -> list[Body]:
    """Scenario env (a mapping or a Kubernetes list) → a Kubernetes EnvVar list."""
    if isinstance(env, list):
        return [dict(e) for e in env]
    result: list[Body] = []
    for key, value in (env or {}).items():
        if isinstance(value, dict):
            source = value.get("valueFrom", value)
            ref = source.get("secretKeyRef") or source.get("configMapKeyRef")
            kind = "secretKeyRef" if "secretKeyRef" in source else "configMapKeyRef"
            if isinstance(ref, str):  # shorthand `{secretKeyRef: db-credentials}`: key named like the var
                ref = {"name": ref, "key": key}
            result.append({"name": key, "valueFrom": {kind: dict(ref)}})
        else:
            result.append({"name": key, "value": str(value)})
    return result


def _volumes(entry: DeploymentState) -> tuple[list[Body], list[Body]]:
    volumes: list[Body] = []
    mounts: list[Body] = []
    for ref in entry.volumes_from or []:
        name = str(ref).split("/", 1)[-1]
        volumes.append({"name": name, "configMap": {"name": name}})
        mounts.append({"name": name, "mountPath": f"/etc/{name}", "readOnly": True})
    for claim in entry.volumes or []:
        volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": claim, "mountPath": f"/data/{claim}"})
    return volumes, mounts


def _resources(entry: DeploymentState) -> Body:
    resources: Body = {}
    if entry.resource_requests:
        resources["requests"] = dict(entry.resource_requests)
    if entry.resource_limits:
        resources["limits"] = dict(entry.resource_limits)
    if entry.memory_limit:
        resources.setdefault("limits", {})["memory"] = str(entry.memory_limit)
    return resources


def pod_spec(name: str, entry: DeploymentState, image: str, sidecars: tuple[str, ...] = ()) -> Body:
    """A pod spec for workload `name` from its state entry (containers, env, volumes, resources)."""
    volumes, mounts = _volumes(entry)
    given = entry.containers or [Container(name=name)]
    containers = []
    for c in given:
        container: Body = {
            "name": c.name if c.name is not None else name,
            "image": c.image if c.image is not None else image,
            "ports": [{"containerPort": DEFAULT_PORT, "protocol": "TCP"}],
            "imagePullPolicy": "IfNotPresent",
        }
        env = env_list(c.env) + (env_list(entry.env) if c is given[0] else [])
        if env:
            container["env"] = env
        resources = copy.deepcopy(c.resources) or _resources(entry)
        if resources:
            container["resources"] = resources
        if mounts and c is given[0]:
            container["volumeMounts"] = mounts
        containers.append(container)
    spec: Body = {"containers": containers, "restartPolicy": "Always", "terminationGracePeriodSeconds": 30}
    # Native sidecars first (they start before, and keep running beside, the other init containers).
    init: list[Body] = [
        {"name": n, "image": default_image(n), "imagePullPolicy": "IfNotPresent", "restartPolicy": "Always"}
        for n in sidecars
    ]
    init += [
        {
            "name": c.name,
            "image": c.image if c.image is not None else default_image(c.name),
            "imagePullPolicy": "IfNotPresent",
        }
        for c in entry.init_containers or []
    ]
    if init:
        spec["initContainers"] = init
    if volumes:
        spec["volumes"] = volumes
    affinity = entry.affinity
    if isinstance(affinity, dict):
        spec["affinity"] = copy.deepcopy(affinity)
    return spec


# Requests no twin node fits (4 CPUs, 16Gi each): a Deployment declared `pending` asks for them, so the
# scheduler leaves its pods Pending with `Insufficient cpu` (or memory) until the agent lowers them.
UNSCHEDULABLE_REQUESTS = {"cpu": {"cpu": "64"}, "memory": {"memory": "256Gi"}}


def unschedulable_requests(reason: str | None) -> Body:
    """The requests behind a declared `pending` state, by the resource its reason names (cpu by default)."""
    lowered = str(reason or "").lower()
    return dict(UNSCHEDULABLE_REQUESTS["memory" if "memory" in lowered else "cpu"])


def _workload_meta(
    name: str, namespace: str, entry: DeploymentState
) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations of a declared workload (team, zone, GitOps tracking included)."""
    labels = {"app": name, **{str(k): str(v) for k, v in (entry.labels or {}).items()}}
    if entry.owner_team:
        labels["team"] = str(entry.owner_team)
    if entry.zone:
        labels["security-zone"] = str(entry.zone)
    annotations = {str(k): str(v) for k, v in (entry.annotations or {}).items()}
    if entry.managed_by == "gitops":
        labels["app.kubernetes.io/managed-by"] = "argocd"
        labels["app.kubernetes.io/instance"] = name
        annotations["argocd.argoproj.io/tracking-id"] = f"{name}:apps/Deployment:{namespace}/{name}"
    return labels, annotations


def deployment_objects(
    ctx: TwinContext, name: str, namespace: str, entry: DeploymentState
) -> list[TwinObject]:
    """A Deployment in the declared state: its spec only. The sandbox's Deployment and ReplicaSet
    controllers create its ReplicaSets and Pods, the scheduler places them and kwok plays their kubelet,
    with the fault the declared state implies (`sandbox.faults`).

    A declared earlier release (`previous_image`) becomes real rollout history: the provider creates the
    Deployment with the earlier template first, and rolls out the declared one once the controller has
    its ReplicaSet (`TwinObject.rollout_from`), so `kubectl rollout undo` has something to go back to. A
    rollout in progress is the same, with the earlier release available before the new one starts.
    """
    state = entry.status or "running"
    rolling = state == "rolling_update_in_progress"
    default_replicas = 3 if rolling else 1
    replicas = entry.replicas if entry.replicas is not None else default_replicas
    image = str(entry.current_image or entry.image or default_image(name))
    sandbox_ns = ctx.ns(namespace)
    labels, annotations = _workload_meta(name, namespace, entry)
    selector = {"app": name}
    template_labels = {
        "app": name,
        **{k: v for k, v in labels.items() if k in ("team", "service", "version")},
    }
    spec = pod_spec(name, entry, image, ctx.sidecars.get((namespace, name), ()))
    if state == "pending" and not spec["containers"][0].get("resources", {}).get("requests"):
        resources = spec["containers"][0].setdefault("resources", {})
        resources["requests"] = unschedulable_requests(entry.reason)
    strategy: Body = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    if entry.update_strategy == "Recreate":
        strategy = {"type": "Recreate"}
    template = {"metadata": {"labels": template_labels}, "spec": spec}
    deployment = TwinObject(
        "apps/v1",
        "Deployment",
        name,
        namespace=sandbox_ns,
        body={
            "metadata": {"name": name, "namespace": sandbox_ns, "labels": labels, "annotations": annotations},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": selector},
                "strategy": strategy,
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
                "template": template,
            },
        },
    )
    earlier = entry.previous_image or (previous_version(image) if rolling else None)
    if earlier and earlier != image:
        first = copy.deepcopy(template)
        first["spec"]["containers"][0]["image"] = str(earlier)
        deployment.rollout_from = first
        deployment.available_first = rolling
    return [deployment]


def standalone_pod(ctx: TwinContext, name: str, namespace: str, entry: PodStateEntry) -> TwinObject:
    """A Pod declared on its own (e.g. `pod/api-server-7d9f4`), with its env; the scheduler places it
    (on the declared node when one is named) and kwok plays its state (`sandbox.faults`)."""
    state = entry.status or "running"
    workload = name.rsplit("-", 1)[0] if "-" in name else name
    sandbox_ns = ctx.ns(namespace)
    template = DeploymentState(env=entry.env, restarts=entry.restarts)  # what a pod shares with one
    spec = pod_spec(workload, template, default_image(workload), ctx.sidecars.get((namespace, name), ()))
    if state == "pending":
        spec["containers"][0].setdefault("resources", {})["requests"] = unschedulable_requests(None)
    elif entry.node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": entry.node}
    labels = {"app": workload, **{str(k): str(v) for k, v in (entry.labels or {}).items()}}
    body: Body = {"metadata": {"name": name, "namespace": sandbox_ns, "labels": labels}, "spec": spec}
    return TwinObject("v1", "Pod", name, body, sandbox_ns)
