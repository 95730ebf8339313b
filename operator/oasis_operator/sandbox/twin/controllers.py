"""StatefulSets, DaemonSets, Jobs and CronJobs of the twin: their declared objects, nothing derived.

Each builder is pure and returns the object's `metadata` and `spec` only. The sandbox plane's real
controllers make the rest (a StatefulSet's and a DaemonSet's pods, a CronJob's Jobs, a Job's pods, with
their owner references), its scheduler places the pods and kwok runs them; so no builder here writes a
status, a pod or a pod name.

The pod template is the one every declared workload gets (`workloads.pod_spec`, from the shared
`PodTemplateState` vocabulary), plus what only these kinds declare: a node selector and tolerations, a
Job's command and restart policy, a StatefulSet's volume claim templates. Selector and pod labels are
`app: <name>` (what an HPA, a PDB or a Service of the workload selects) with the declared labels beside it.

A declared health state other than running is a fault (`sandbox.faults`): a kwok Stage that selects the
workload's pods by their namespace and `app` label, created with the environment; nothing on the pods
themselves says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oasis_operator.models.declared_state import DeploymentState
from oasis_operator.models.declared_workloads import (
    CronJobState,
    DaemonSetState,
    JobState,
    JobTemplateState,
    PlacedPodState,
    PodTemplateState,
    StatefulSetState,
    VolumeClaimTemplate,
)
from oasis_operator.models.environment import ClusterObjectBinding, FixtureEntry
from oasis_operator.sandbox.naming import sandbox_name
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject, TwinPlan
from oasis_operator.sandbox.twin.resources import POOL_KEY, ZONE_LABELS, pool_taint
from oasis_operator.sandbox.twin.workloads import default_image, pod_spec, unschedulable_requests

ControllerState = StatefulSetState | DaemonSetState | JobState | CronJobState


def _strs(mapping: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (mapping or {}).items()}


def _labels(name: str, entry: PodTemplateState) -> dict[str, str]:
    """The workload's labels, also its pods': `app: <name>`, the declared ones, the zone's."""
    labels = {"app": name, **_strs(entry.labels)}
    if entry.zone:
        labels.update(dict.fromkeys(ZONE_LABELS, entry.zone))
    return labels


def _metadata(ctx: TwinContext, name: str, namespace: str, entry: PodTemplateState) -> Body:
    meta: Body = {"name": name, "namespace": ctx.ns(namespace), "labels": _labels(name, entry)}
    if entry.annotations:
        meta["annotations"] = _strs(entry.annotations)
    return meta


def _pod_vocabulary(entry: PodTemplateState) -> DeploymentState:
    """The entry's shared pod fields as the model `workloads.pod_spec` reads (they are the same fields)."""
    shared = entry.model_dump(include=set(PodTemplateState.model_fields), exclude_unset=True)
    return DeploymentState.model_validate(shared)


def pod_template(
    ctx: TwinContext, name: str, namespace: str, entry: PlacedPodState, status: str | None
) -> Body:
    """The pod template of workload `name`: labels and the pod spec (its health is a fault Stage's)."""
    image = entry.image or default_image(name)
    spec = pod_spec(name, _pod_vocabulary(entry), image, ctx.sidecars.get((namespace, name), ()))
    if entry.node_selector:
        spec["nodeSelector"] = _strs(entry.node_selector)
    if entry.tolerations:
        spec["tolerations"] = [t.model_dump(exclude_none=True) for t in entry.tolerations]
    if status == "pending" and not spec["containers"][0].get("resources", {}).get("requests"):
        spec["containers"][0].setdefault("resources", {})["requests"] = unschedulable_requests(entry.reason)
    return {"metadata": {"labels": _labels(name, entry)}, "spec": spec}


def _claim(template: VolumeClaimTemplate) -> Body:
    spec: Body = {
        "accessModes": list(template.access_modes or ["ReadWriteOnce"]),
        "resources": {"requests": {"storage": str(template.storage)}},
    }
    if template.storage_class is not None:
        spec["storageClassName"] = template.storage_class
    return {"metadata": {"name": template.name}, "spec": spec}


def statefulset(ctx: TwinContext, name: str, namespace: str, entry: StatefulSetState) -> TwinObject:
    """An apps/v1 StatefulSet: replicas, governing service, claim templates mounted in its first container."""
    template = pod_template(ctx, name, namespace, entry, entry.status)
    claims = entry.volume_claim_templates or []
    if claims:
        container = template["spec"]["containers"][0]
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            *({"name": c.name, "mountPath": c.mount_path or f"/data/{c.name}"} for c in claims),
        ]
    spec: Body = {
        "replicas": entry.replicas if entry.replicas is not None else 1,
        "serviceName": entry.service_name or name,
        "selector": {"matchLabels": {"app": name}},
        "template": template,
    }
    if claims:
        spec["volumeClaimTemplates"] = [_claim(c) for c in claims]
    if entry.pod_management_policy:
        spec["podManagementPolicy"] = entry.pod_management_policy
    if entry.update_strategy:
        spec["updateStrategy"] = {"type": entry.update_strategy}
    body = {"metadata": _metadata(ctx, name, namespace, entry), "spec": spec}
    return TwinObject("apps/v1", "StatefulSet", name, body, ctx.ns(namespace))


def daemonset(ctx: TwinContext, name: str, namespace: str, entry: DaemonSetState) -> TwinObject:
    """An apps/v1 DaemonSet: one pod per node its selector and tolerations allow.

    The DaemonSet controller picks nodes from the template alone (the namespace's node selector and
    tolerations reach the pods only at admission), so the template names the environment's own node
    pool itself: without it the controller would skip every tainted node of the environment and aim
    pods at other environments' nodes."""
    template = pod_template(ctx, name, namespace, entry, entry.status)
    pod = template["spec"]
    pod["nodeSelector"] = {**pod.get("nodeSelector", {}), POOL_KEY: ctx.env_id}
    toleration = {**pool_taint(ctx.env_id), "operator": "Equal"}
    pod["tolerations"] = [*pod.get("tolerations", []), toleration]
    spec: Body = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if entry.update_strategy:
        spec["updateStrategy"] = {"type": entry.update_strategy}
    body = {"metadata": _metadata(ctx, name, namespace, entry), "spec": spec}
    return TwinObject("apps/v1", "DaemonSet", name, body, ctx.ns(namespace))


_JOB_FIELDS = {
    "completions": "completions",
    "parallelism": "parallelism",
    "completion_mode": "completionMode",
    "backoff_limit": "backoffLimit",
    "active_deadline_seconds": "activeDeadlineSeconds",
    "ttl_seconds_after_finished": "ttlSecondsAfterFinished",
}


def job_spec(ctx: TwinContext, name: str, namespace: str, entry: JobTemplateState) -> Body:
    """A batch/v1 Job spec (also a CronJob's job template); the API server adds the selector."""
    template = pod_template(ctx, name, namespace, entry, entry.status)
    pod = template["spec"]
    pod["restartPolicy"] = entry.restart_policy or "Never"
    for container in pod["containers"]:
        container.pop("ports", None)  # a batch container serves nothing
    if entry.command:
        pod["containers"][0]["command"] = list(entry.command)
    if entry.args:
        pod["containers"][0]["args"] = list(entry.args)
    spec: Body = {
        key: getattr(entry, field) for field, key in _JOB_FIELDS.items() if getattr(entry, field) is not None
    }
    spec["template"] = template
    return spec


def job(ctx: TwinContext, name: str, namespace: str, entry: JobState) -> TwinObject:
    """A batch/v1 Job: its pods run to completion (or fail) as declared."""
    spec = job_spec(ctx, name, namespace, entry)
    if entry.suspend is not None:
        spec["suspend"] = entry.suspend
    body = {"metadata": _metadata(ctx, name, namespace, entry), "spec": spec}
    return TwinObject("batch/v1", "Job", name, body, ctx.ns(namespace))


_CRON_FIELDS = {
    "time_zone": "timeZone",
    "suspend": "suspend",
    "concurrency_policy": "concurrencyPolicy",
    "starting_deadline_seconds": "startingDeadlineSeconds",
    "successful_jobs_history_limit": "successfulJobsHistoryLimit",
    "failed_jobs_history_limit": "failedJobsHistoryLimit",
}


def cronjob(ctx: TwinContext, name: str, namespace: str, entry: CronJobState) -> TwinObject:
    """A batch/v1 CronJob: the schedule and its policies around the Job spec it starts each time."""
    spec: Body = {"schedule": entry.schedule}
    spec.update({key: getattr(entry, f) for f, key in _CRON_FIELDS.items() if getattr(entry, f) is not None})
    spec["jobTemplate"] = {
        "metadata": {"labels": _labels(name, entry)},
        "spec": job_spec(ctx, name, namespace, entry),
    }
    body = {"metadata": _metadata(ctx, name, namespace, entry), "spec": spec}
    return TwinObject("batch/v1", "CronJob", name, body, ctx.ns(namespace))


DECLARED_KEY = "declared-name"


def claim_volumes(ctx: TwinContext, statefulset: TwinObject) -> list[TwinObject]:
    """A PersistentVolume for each claim the StatefulSet's pods will make (`<template>-<name>-<i>`),
    bound to it in advance: the sandbox runs no storage provisioner, so its volumes are provisioned
    already, as a platform's dynamic provisioner would have made them for the declared replicas."""
    spec = statefulset.body["spec"]
    volumes = []
    for template in spec.get("volumeClaimTemplates") or []:
        claim_spec = template["spec"]
        for ordinal in range(int(spec.get("replicas", 1))):
            claim = f"{template['metadata']['name']}-{statefulset.name}-{ordinal}"
            declared = f"pvc-{claim}"
            pv_name = sandbox_name(ctx.prefix, ctx.env_id, declared)
            pv_spec: Body = {
                "capacity": {"storage": claim_spec["resources"]["requests"]["storage"]},
                "accessModes": list(claim_spec["accessModes"]),
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": claim_spec.get("storageClassName", ""),
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "namespace": statefulset.namespace,
                    "name": claim,
                },
                "csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": f"vol-{pv_name[-12:]}"},
            }
            metadata = {"name": pv_name, "labels": {DECLARED_KEY: declared}}  # taken off by add_to_plan
            volumes.append(
                TwinObject("v1", "PersistentVolume", pv_name, {"metadata": metadata, "spec": pv_spec})
            )
    return volumes


_BUILD: dict[type[ControllerState], Callable[[TwinContext, str, str, Any], TwinObject]] = {
    StatefulSetState: statefulset,
    DaemonSetState: daemonset,
    JobState: job,
    CronJobState: cronjob,
}
MODELS: tuple[type[ControllerState], ...] = tuple(_BUILD)  # the declared kinds built here


def add_to_plan(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: ControllerState) -> None:
    """The builder table's entry point: the object, and the declared init containers' logs as fixtures
    (kept like a Deployment's, for the gateway to serve)."""
    built = _BUILD[type(entry)](ctx, name, namespace, entry)
    plan.objects.append(built)
    if isinstance(entry, StatefulSetState):
        for volume in claim_volumes(ctx, built):
            plan.objects.append(volume)
            declared = str(volume.body["metadata"]["labels"].pop(DECLARED_KEY))
            plan.cluster_objects.append(
                ClusterObjectBinding(kind="PersistentVolume", declared=declared, sandbox=volume.name)
            )
    for container in entry.init_containers or []:
        if container.logs:
            data = {"container": container.name, "entries": [container.logs]}
            plan.fixtures.append(FixtureEntry(kind="logs", name=name, namespace=namespace, data=data))
