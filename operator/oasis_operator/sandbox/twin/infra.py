"""Builders for cluster infrastructure in the twin: nodes, storage, quotas and events."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from oasis_operator.models.declared_state import EventsState, NodesState, NodeState, PvcState
from oasis_operator.models.declared_values import parse_age
from oasis_operator.models.kinds import EVENT_OBJECTS
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject, percent
from oasis_operator.sandbox.twin.resources import POOL_KEY, pool_taint

# What twin Nodes say their kubelet runs: the local control plane's release (localcluster/release.env;
# tests/unit/localcluster/test_release.py keeps them equal), so `kubectl get nodes` shows no version skew.
KUBELET_VERSION = "v1.37.2"


def pvc_and_pv(
    ctx: TwinContext, name: str, namespace: str, entry: PvcState, pv_name: str
) -> list[TwinObject]:
    storage = str(entry.storage or "10Gi")
    sandbox_ns = ctx.ns(namespace)
    bound = entry.bound if entry.bound is not None else True
    pvc_body: Body = {
        "metadata": {"name": name, "namespace": sandbox_ns},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": storage}},
            "storageClassName": "standard",
        },
    }
    if not bound:
        return [TwinObject("v1", "PersistentVolumeClaim", name, pvc_body, sandbox_ns, {"phase": "Pending"})]
    pvc_body["spec"]["volumeName"] = pv_name
    pv = TwinObject(
        "v1",
        "PersistentVolume",
        pv_name,
        {
            "metadata": {"name": pv_name},
            "spec": {
                "capacity": {"storage": storage},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": "standard",
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": sandbox_ns, "name": name},
                "csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": f"vol-{pv_name[-12:]}"},
            },
        },
        status={"phase": "Bound"},
    )
    claim_status = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": storage}}
    return [pv, TwinObject("v1", "PersistentVolumeClaim", name, pvc_body, sandbox_ns, claim_status)]


@dataclass(frozen=True)
class DeclaredNode:
    """One twin node as declared: the pool's shared entry (`nodes`) and the node's own (`node/<name>`)."""

    name: str
    pool: NodesState
    own: NodeState


def node(ctx: TwinContext, sandbox_name: str, index: int, declared: DeclaredNode) -> TwinObject:
    """A twin Node: capacity, allocatable, conditions (pressure as declared), addresses and info."""
    pool, own = declared.pool, declared.own
    cpu = str(pool.allocatable_cpu_per_node or "4000m")
    if pool.allocatable_cpu == "low":
        cpu = "500m"
    memory = str(pool.allocatable_memory_per_node or "16Gi")
    pressure = {
        "MemoryPressure": bool(own.memory_pressure),
        "DiskPressure": False,
        "PIDPressure": False,
    }
    ready: Body = {"status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    for condition in own.conditions or []:
        if condition.get("type") in pressure:
            pressure[condition["type"]] = str(condition.get("status")) == "True"
        elif condition.get("type") == "Ready" and str(condition.get("status")) != "True":
            # A node whose kubelet is not ready (the node lifecycle controller taints it not-ready).
            ready = {
                "status": str(condition.get("status")),
                "reason": str(condition.get("reason") or "KubeletNotReady"),
                "message": str(condition.get("message") or "container runtime is down"),
            }
    since = ctx.ago(timedelta(days=12))
    conditions = [
        {
            "type": t,
            "status": str(v),
            "reason": f"KubeletHas{'' if v else 'No'}{t.replace('Pressure', '')}Pressure"
            if t != "PIDPressure"
            else ("KubeletHasInsufficientPID" if v else "KubeletHasSufficientPID"),
            "message": f"kubelet has {'' if v else 'no '}{t.lower().replace('pressure', ' pressure')}",
            "lastHeartbeatTime": ctx.ago(timedelta(seconds=20)),
            "lastTransitionTime": since,
        }
        for t, v in pressure.items()
    ]
    conditions.append(
        {
            "type": "Ready",
            **ready,
            "lastHeartbeatTime": ctx.ago(timedelta(seconds=20)),
            "lastTransitionTime": since,
        }
    )
    declared_name = sandbox_name.rsplit("-", 2)[-2] + "-" + sandbox_name.rsplit("-", 1)[-1]
    ip = f"10.0.{index // 200 + 1}.{index % 200 + 10}"
    body = {
        "metadata": {
            "name": sandbox_name,
            "labels": {
                # The node lifecycle controller keeps the deprecated beta labels beside the stable ones:
                # they are there from the start, as on a node a kubelet registered long ago.
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/hostname": declared_name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m5.xlarge",
                "topology.kubernetes.io/zone": f"eu-west-1{'abc'[index % 3]}",
                POOL_KEY: ctx.env_id,
            },
        },
        # The environment's own node pool (twin.resources.pool_annotations); kwok plays its kubelet.
        "spec": {"podCIDR": f"10.244.{index}.0/24", "taints": [pool_taint(ctx.env_id)]},
    }
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    status = {
        "capacity": capacity,
        "allocatable": {**capacity, "cpu": cpu, "memory": memory},
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": declared_name}],
        "nodeInfo": {
            # Current kubelets no longer report kubeProxyVersion (deprecated since 1.31).
            "kubeletVersion": KUBELET_VERSION,
            "containerRuntimeVersion": "containerd://2.1.4",
            "osImage": "Ubuntu 24.04.3 LTS",
            "kernelVersion": "6.8.0-1036-aws",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "machineID": f"{index:032x}",
            "systemUUID": f"ec2{index:05x}-0000-0000-0000-000000000000",
            "bootID": f"{index:08x}-0000-0000-0000-000000000000",
        },
    }
    return TwinObject("v1", "Node", sandbox_name, body, None, status)


def event(
    ctx: TwinContext,
    namespace: str,
    obj_kind: str,
    obj_name: str,
    etype: str,
    reason: str,
    message: str,
    age: timedelta,
    count: int = 1,
    seed: str = "",
) -> TwinObject:
    kind, api_version = EVENT_OBJECTS.get(obj_kind.lower(), (obj_kind, "v1"))
    sandbox_ns = ctx.ns(namespace)
    name = (
        f"{obj_name}.{hashlib.sha256(f'{ctx.env_id}/{reason}/{seed}/{obj_name}'.encode()).hexdigest()[:16]}"
    )
    source_component = {"ScalingReplicaSet": "deployment-controller", "FailedScheduling": "default-scheduler"}
    body = {
        "metadata": {"name": name, "namespace": sandbox_ns},
        "involvedObject": {
            "kind": kind,
            "name": obj_name,
            "namespace": sandbox_ns,
            "apiVersion": api_version,
        },
        "type": etype,
        "reason": reason,
        "message": message,
        "count": count,
        "firstTimestamp": ctx.ago(age + timedelta(minutes=5 * (count - 1))),
        "lastTimestamp": ctx.ago(age),
        "source": {"component": source_component.get(reason, "kubelet")},
    }
    return TwinObject("v1", "Event", name, body, sandbox_ns)


def declared_events(ctx: TwinContext, namespace: str, entry: EventsState) -> list[TwinObject]:
    result = []
    for i, item in enumerate(entry.recent or []):
        kind, _, obj = item.object.partition("/")  # the model holds it to <kind>/<name>
        result.append(
            event(
                ctx,
                namespace,
                kind,
                obj,
                str(item.type if item.type is not None else "Normal"),
                str(item.reason if item.reason is not None else "Unknown"),
                str(item.message if item.message is not None else ""),
                parse_age(item.age if item.age is not None else "1m"),
                seed=str(i),
            )
        )
    return result


CONTAINER_DEFAULTS = "container-defaults"


def container_defaults(ctx: TwinContext, namespace: str) -> TwinObject:
    """The LimitRange that gives a container without requests or limits its defaults, as platforms set
    beside a compute quota (the quota refuses a pod whose containers name none)."""
    limits = [
        {
            "type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
        }
    ]
    body = {
        "metadata": {"name": CONTAINER_DEFAULTS, "namespace": ctx.ns(namespace)},
        "spec": {"limits": limits},
    }
    return TwinObject("v1", "LimitRange", CONTAINER_DEFAULTS, body, ctx.ns(namespace))


def resource_quota(ctx: TwinContext, name: str, namespace: str) -> TwinObject:
    hard = {
        "requests.cpu": "8",
        "requests.memory": "16Gi",
        "limits.cpu": "16",
        "limits.memory": "32Gi",
        "pods": "50",
    }
    body = {"metadata": {"name": name, "namespace": ctx.ns(namespace)}, "spec": {"hard": hard}}
    used = {
        "requests.cpu": "1",
        "requests.memory": "2Gi",
        "limits.cpu": "2",
        "limits.memory": "4Gi",
        "pods": "2",
    }
    return TwinObject("v1", "ResourceQuota", name, body, ctx.ns(namespace), {"hard": hard, "used": used})


def node_usage_percent(declared: DeclaredNode) -> float | None:
    value = declared.own.cpu_usage or declared.pool.current_utilization
    return percent(value) if value is not None else None
