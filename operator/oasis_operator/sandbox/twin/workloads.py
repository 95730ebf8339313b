"""Deployments, their ReplicaSets and Pods, and standalone Pods, consistent with each other."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from oasis_operator.models.declared_state import Container, DeploymentState, PodStateEntry
from oasis_operator.models.declared_values import parse_age
from oasis_operator.sandbox.naming import pod_suffix, pod_template_hash
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject
from oasis_operator.sandbox.twin.pods import PodHealth, pod_status

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


def health_for(state: str, index: int, replicas: int, entry: DeploymentState | None = None) -> PodHealth:
    """How replica `index` of `replicas` looks in `state`; `entry` adds declared restarts, reason, init."""
    entry = entry or DeploymentState()
    restarts = entry.restarts or 0
    if any(c.status == "error" for c in entry.init_containers or []):
        return PodHealth(state, ready=False, restarts=restarts or 4, init_failed=True)
    if state in ("running", "elevated_error_rate"):
        return PodHealth(state, ready=True, restarts=restarts)
    if state == "degraded":
        # At least one replica fails its readiness probe; with one replica, that one.
        return PodHealth("running", ready=index != replicas - 1, restarts=restarts)
    if state == "CrashLoopBackOff":
        return PodHealth(state, ready=False, restarts=restarts or 5 + index)
    if state == "OOMKilled":
        return PodHealth(state, ready=False, restarts=restarts or 3 + index)
    if state == "pending":
        reason = entry.reason or "Insufficient cpu"
        return PodHealth(state, ready=False, reason=_unschedulable_message(str(reason)))
    if state == "rolling_update_in_progress":  # a pod of the new revision that is not ready yet
        return PodHealth("running", ready=False)
    if state in ("error", "ImagePullBackOff"):
        return PodHealth(state, ready=False, restarts=restarts)
    raise ValueError(state)


def _unschedulable_message(reason: str) -> str:
    lowered = reason.lower()
    resource = "memory" if "memory" in lowered else "cpu"
    return f"0/3 nodes are available: 3 Insufficient {resource}."


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
    """A Deployment with its revision history (ReplicaSets) and Pods in the declared health state."""
    state = entry.status or "running"
    default_replicas = 1 if state != "rolling_update_in_progress" else 3
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

    revisions: list[tuple[str, int]] = []
    if entry.previous_image and state != "rolling_update_in_progress":
        revisions.append((entry.previous_image, 0))
    rolling = state == "rolling_update_in_progress"
    if rolling:
        revisions.append((entry.previous_image or previous_version(image), replicas - 1))
    revisions.append((image, 1 if rolling else replicas))
    revision = len(revisions)

    strategy: Body = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    if entry.update_strategy == "Recreate":
        strategy = {"type": "Recreate"}
    deploy_annotations = {"deployment.kubernetes.io/revision": str(revision), **annotations}
    deployment = TwinObject(
        "apps/v1",
        "Deployment",
        name,
        namespace=sandbox_ns,
        body={
            "metadata": {
                "name": name,
                "namespace": sandbox_ns,
                "labels": labels,
                "annotations": deploy_annotations,
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": selector},
                "strategy": strategy,
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
                "template": {"metadata": {"labels": template_labels}, "spec": spec},
            },
        },
    )
    objects = [deployment]
    deploy_age = parse_age(entry.last_deploy) if entry.last_deploy else timedelta(days=3)
    total_ready = 0
    for number, (rs_image, rs_replicas) in enumerate(revisions, start=1):
        rs_spec = copy.deepcopy(spec)
        rs_spec["containers"][0]["image"] = rs_image
        template_hash = pod_template_hash(f"{name}/{rs_image}/{number}")
        rs_name = f"{name}-{template_hash}"
        rs_labels = {**template_labels, "pod-template-hash": template_hash}
        current = number == revision
        rs_age = deploy_age if current else deploy_age + timedelta(days=7 * (revision - number))
        rolling_current = current if rolling else None  # the old revision serves; the new pod is not ready
        health = (state, entry, rolling_current)
        pods, ready = _revision_pods(
            ctx, (sandbox_ns, rs_name), rs_labels, rs_spec, health, rs_replicas, rs_age
        )
        total_ready += ready
        rs = TwinObject(
            "apps/v1",
            "ReplicaSet",
            rs_name,
            namespace=sandbox_ns,
            owner=("Deployment", name),
            body={
                "metadata": {
                    "name": rs_name,
                    "namespace": sandbox_ns,
                    "labels": rs_labels,
                    "annotations": {
                        "deployment.kubernetes.io/revision": str(number),
                        "deployment.kubernetes.io/desired-replicas": str(replicas),
                        "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                    },
                },
                "spec": {
                    "replicas": rs_replicas,
                    "selector": {"matchLabels": {**selector, "pod-template-hash": template_hash}},
                    "template": {"metadata": {"labels": rs_labels}, "spec": rs_spec},
                },
            },
            status={
                "replicas": rs_replicas,
                "fullyLabeledReplicas": rs_replicas,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": 1,
            },
        )
        objects.append(rs)
        objects.extend(pods)
    deployment.status = _deployment_status(
        ctx, name, state, replicas, total_ready, revisions, entry, deploy_age
    )
    return objects


def _revision_pods(
    ctx: TwinContext,
    rs: tuple[str, str],
    labels: Body,
    spec: Body,
    health: tuple[str, DeploymentState, bool | None],
    count: int,
    age: timedelta,
) -> tuple[list[TwinObject], int]:
    """Pods of ReplicaSet `rs` (namespace, name), spread over the twin nodes; also how many are ready."""
    sandbox_ns, rs_name = rs
    state, entry, rolling_current = health
    pods = []
    ready = 0
    for i in range(count):
        pod_name = f"{rs_name}-{pod_suffix(f'{ctx.env_id}/{rs_name}/{i}')}"
        if rolling_current is None:
            pod_health = health_for(state, i, count, entry)
        else:
            pod_health = PodHealth("running", ready=not rolling_current)
        node = None if pod_health.state == "pending" else ctx.node_names[i % len(ctx.node_names)]
        pod_body: Body = {
            "metadata": {"name": pod_name, "namespace": sandbox_ns, "labels": labels},
            "spec": {**copy.deepcopy(spec), **({"nodeName": node} if node else {})},
        }
        status = pod_status(ctx, pod_name, pod_body["spec"], pod_health, node, age)
        pods.append(
            TwinObject("v1", "Pod", pod_name, pod_body, sandbox_ns, status, owner=("ReplicaSet", rs_name))
        )
        ready += int(pod_health.ready and not pod_health.init_failed)
    return pods, ready


def _deployment_status(
    ctx: TwinContext,
    name: str,
    state: str,
    replicas: int,
    ready: int,
    revisions: list[tuple[str, int]],
    entry: DeploymentState,
    deploy_age: timedelta,
) -> Body:
    total = sum(r for _, r in revisions)
    current_hash = pod_template_hash(f"{name}/{revisions[-1][0]}/{len(revisions)}")
    updated = revisions[-1][1]
    since = ctx.ago(deploy_age)
    available = ready >= max(replicas - max(replicas // 4, 1 if replicas > 1 else 0), 1) if replicas else True
    conditions: list[Body] = [
        {
            "type": "Available",
            "status": "True" if available else "False",
            "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability."
            if available
            else "Deployment does not have minimum availability.",
            "lastUpdateTime": since,
            "lastTransitionTime": since,
        },
        {
            "type": "Progressing",
            "status": "True",
            "reason": "ReplicaSetUpdated"
            if state == "rolling_update_in_progress"
            else "NewReplicaSetAvailable",
            "message": f'ReplicaSet "{name}-{current_hash}" '
            + (
                "is progressing." if state == "rolling_update_in_progress" else "has successfully progressed."
            ),
            "lastUpdateTime": since,
            "lastTransitionTime": since,
        },
    ]
    for declared in entry.conditions or []:
        for cond in conditions:
            if cond["type"] == declared.get("type"):
                cond.update({k: str(v) for k, v in declared.items() if k in ("status", "reason", "message")})
                if "reason" in declared:
                    cond["reason"] = (
                        "".join(w.capitalize() for w in str(declared["reason"]).split()) or "Unknown"
                    )
                    cond["message"] = str(declared["reason"])
    status: Body = {
        "observedGeneration": 1,
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": conditions,
    }
    if total - ready > 0:
        status["unavailableReplicas"] = total - ready
    return {k: v for k, v in status.items() if v != 0 or k in ("observedGeneration", "replicas")}


def standalone_pod(ctx: TwinContext, name: str, namespace: str, entry: PodStateEntry) -> TwinObject:
    """A Pod declared on its own (e.g. `pod/api-server-7d9f4`), with its env and state."""
    state = entry.status or "running"
    workload = name.rsplit("-", 1)[0] if "-" in name else name
    sandbox_ns = ctx.ns(namespace)
    template = DeploymentState(env=entry.env, restarts=entry.restarts)  # what a pod shares with one
    spec = pod_spec(workload, template, default_image(workload), ctx.sidecars.get((namespace, name), ()))
    node = None
    if state != "pending":
        node = ctx.node_names[0] if not entry.node else _sandbox_node(ctx, entry.node)
        spec["nodeName"] = node
    health = health_for(state, 0, 1, template)
    labels = {"app": workload, **{str(k): str(v) for k, v in (entry.labels or {}).items()}}
    body: Body = {"metadata": {"name": name, "namespace": sandbox_ns, "labels": labels}, "spec": spec}
    status = pod_status(ctx, name, spec, health, node, timedelta(hours=2))
    return TwinObject("v1", "Pod", name, body, sandbox_ns, status)


def _sandbox_node(ctx: TwinContext, declared: str) -> str:
    # The declared-state rules (`declared_parse`) already refused a node the scenario does not declare.
    return next(n for n in ctx.node_names if n.endswith(f"-{declared}"))
