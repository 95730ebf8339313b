"""The cluster side of the gateway tests' environment, as a cluster has it: Nodes registered with
their status, Deployments rolled out from a previous release by the real controllers, pods placed by the
scheduler and started by kwok (the nodes' kubelet), and a crash loop as a kwok fault Stage
(`sandbox.kwok`) narrowed to one pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.kwok import apply_stages, expression, fault_stage
from oasis_operator.sandbox.twin.resources import POOL_KEY, pool_annotations, pool_taint

T = TypeVar("T")
ENV_LABEL = "oasis.evaluation.dev/env"
NODE_ADDRESSES = {"worker-1": "10.0.0.11", "worker-2": "10.0.0.12"}
PREVIOUS_RELEASE = "0.9.0"  # the image tag of every Deployment's first revision
SETTLE = 90.0  # seconds the controllers, the scheduler and kwok get to bring each step about
TOUCH = "kubernetes.io/change-cause"  # set and removed on a pod to make kwok look at it again
TOUCH_EVERY = 2.0
REVISION = "deployment.kubernetes.io/revision"
CONDITION_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


def until(probe: Callable[[], T | None], what: str, timeout: float = SETTLE) -> T:
    """Poll `probe` until it returns something other than None; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"the test environment did not come about within {timeout:.0f}s: {what}")
        time.sleep(0.2)


def wait_for_default_service_account(core: Any, ns: str) -> None:
    """Pods need the namespace's `default` ServiceAccount, which a controller creates shortly after."""

    def found() -> bool | None:
        try:
            core.read_namespaced_service_account("default", ns)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None
        return True

    until(found, f"the default ServiceAccount of {ns}")


def namespace_body(name: str, env_id: str) -> dict[str, Any]:
    """A namespace whose pods land on the environment's own nodes only (PodNodeSelector and
    PodTolerationRestriction admission read these annotations), as the sandbox provider makes them."""
    return {
        "metadata": {"name": name, "labels": {ENV_LABEL: env_id}, "annotations": pool_annotations(env_id)}
    }


def node_body(sandbox: str, declared: str, env_id: str, index: int) -> dict[str, Any]:
    """A Node as a kubelet registers it (status included: the API server keeps a Node's status on
    create), labelled and tainted for the environment's pool; kwok plays its kubelet from then on."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    pressure = {
        "MemoryPressure": ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        "DiskPressure": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        "PIDPressure": ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    }
    conditions = [
        {"type": kind, "status": "False", "reason": reason, "message": message}
        for kind, (reason, message) in pressure.items()
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": sandbox,
            "labels": {
                "kubernetes.io/hostname": declared,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                POOL_KEY: env_id,
            },
        },
        "spec": {"podCIDR": f"10.244.{index + 1}.0/24", "taints": [pool_taint(env_id)]},
        "status": {
            "conditions": [{**c, "lastHeartbeatTime": now, "lastTransitionTime": now} for c in conditions],
            "addresses": [
                {"type": "InternalIP", "address": NODE_ADDRESSES[declared]},
                {"type": "Hostname", "address": declared},
            ],
            "capacity": capacity,
            "allocatable": capacity,
            "nodeInfo": {
                "kubeletVersion": "v1.37.2",
                "osImage": "Debian GNU/Linux 12",
                "containerRuntimeVersion": "containerd://1.6.20",
                "kernelVersion": "6.1.0",
                "architecture": "amd64",
                "operatingSystem": "linux",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


def create_node(api: ApiClient, body: dict[str, Any]) -> None:
    created = request(api, "POST", resource_path("Node"), body)
    if not (created.get("status") or {}).get("conditions"):  # a server that drops a new Node's status
        path = resource_path("Node", None, body["metadata"]["name"]) + "/status"
        request(api, "PATCH", path, {"status": body["status"]}, content_type="application/merge-patch+json")


def nodes_schedulable(core: Any, names: list[str]) -> None:
    """Until the node lifecycle controller has lifted NodeTaint admission's `not-ready` taint (kwok
    renews the nodes' leases): pods created before would first fail to schedule."""

    def lifted() -> bool | None:
        for name in names:
            taints = core.read_node(name).spec.taints or []
            if any(t.key in CONDITION_TAINTS for t in taints):
                return None
        return True

    until(lifted, f"nodes {', '.join(names)} schedulable")


@dataclass(frozen=True)
class Workload:
    """A Deployment of the environment, its pods pinned to one node by its hostname label."""

    namespace: str  # sandbox namespace
    name: str
    node: str  # declared node name
    image: str
    replicas: int = 2

    @property
    def previous_image(self) -> str:
        return self.image.rsplit(":", 1)[0] + ":" + PREVIOUS_RELEASE

    def template(self, image: str) -> dict[str, Any]:
        labels = {"app": self.name}
        container = {
            "name": self.name,
            "image": image,
            "env": [
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
            ],
        }
        return {
            "metadata": {"labels": labels},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": self.node}, "containers": [container]},
        }

    def first_release(self) -> dict[str, Any]:
        """The Deployment as first created: the previous release, no replicas yet."""
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {"app": self.name}},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": self.name}},
                "template": self.template(self.previous_image),
            },
        }


def start_rollout(apps: Any, workload: Workload) -> None:
    """The Deployment at its previous release, then, once the controller has made that revision's
    ReplicaSet, at its current one with its replicas: a real revision history for `rollout undo`."""
    apps.create_namespaced_deployment(workload.namespace, workload.first_release())

    def first_revision() -> bool | None:
        listed = apps.list_namespaced_replica_set(workload.namespace, label_selector=f"app={workload.name}")
        return True if listed.items else None

    until(first_revision, f"the first ReplicaSet of {workload.name}")
    apps.patch_namespaced_deployment(
        workload.name,
        workload.namespace,
        {"spec": {"replicas": workload.replicas, "template": workload.template(workload.image)}},
    )


def rolled_out_pods(apps: Any, core: Any, workload: Workload) -> list[str]:
    """The names of the workload's pods once its rollout is complete and every pod is ready."""
    want = workload.replicas

    def complete() -> list[str] | None:
        dep = apps.read_namespaced_deployment(workload.name, workload.namespace)
        status = dep.status
        if (status.observed_generation or 0) < dep.metadata.generation:
            return None
        if (status.replicas, status.updated_replicas, status.available_replicas) != (want, want, want):
            return None
        pods = core.list_namespaced_pod(workload.namespace, label_selector=f"app={workload.name}").items
        live = [p for p in pods if not p.metadata.deletion_timestamp]
        ready = [
            p
            for p in live
            if any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        ]
        if len(live) != want or len(ready) != want:
            return None
        return sorted(p.metadata.name for p in live)

    return until(complete, f"the rollout of {workload.name}")


def crash_loop(api: ApiClient, workload: Workload, pod: str, stage_name: str, labels: dict[str, str]) -> None:
    """Make one running pod crash-loop, as a kubelet would report it: kwok's `crash` Stage narrowed to
    that pod. kwok matches Stages on a pod's changes, not on new Stages, so the pod is touched (an
    annotation set and removed) until it shows the back-off, its restarts and the kubelet's event."""
    core: Any = CoreV1Api(api)
    selects = [
        expression(".metadata.namespace", "In", [workload.namespace]),
        expression(".metadata.name", "In", [pod]),
    ]
    apply_stages(api, [fault_stage(stage_name, "crash", selects, labels)])
    touched = 0.0

    def backing_off() -> bool | None:
        nonlocal touched
        status = (core.read_namespaced_pod(pod, workload.namespace).status.container_statuses or [None])[0]
        waiting = status.state.waiting if status is not None and status.state is not None else None
        if waiting is not None and waiting.reason == "CrashLoopBackOff" and status.restart_count:
            selector = f"involvedObject.name={pod},reason=BackOff"
            events = core.list_namespaced_event(workload.namespace, field_selector=selector).items
            return True if events else None
        if time.monotonic() - touched > TOUCH_EVERY:
            for value in ("1", None):
                core.patch_namespaced_pod(
                    pod, workload.namespace, {"metadata": {"annotations": {TOUCH: value}}}
                )
            touched = time.monotonic()
        return None

    until(backing_off, f"pod {pod} of {workload.name} in CrashLoopBackOff")


def current_pod_hash(api: ApiClient, namespace: str, deployment: str) -> str:
    """The pod-template-hash of the Deployment's current revision, as its controller named it."""
    apps: Any = AppsV1Api(api)
    revision = apps.read_namespaced_deployment(deployment, namespace).metadata.annotations[REVISION]
    for rs in apps.list_namespaced_replica_set(namespace, label_selector=f"app={deployment}").items:
        if (rs.metadata.annotations or {}).get(REVISION) == revision:
            return str(rs.metadata.labels["pod-template-hash"])
    raise AssertionError(f"no ReplicaSet of {deployment} at its revision {revision}")
