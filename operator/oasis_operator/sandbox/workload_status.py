"""Pure builders for what the Deployment and ReplicaSet controllers write: owned ReplicaSets and statuses.

The twin dynamics (`sandbox.dynamics`) decide when these are written; this module decides what they say,
so the same inputs always give the same objects.
"""

from __future__ import annotations

import copy
import json

from oasis_operator.sandbox.naming import pod_template_hash
from oasis_operator.sandbox.twin.plan import Body

REVISION = "deployment.kubernetes.io/revision"
# A twin materialises at most this many pods per ReplicaSet: enough for every view an agent takes, while
# an absurd scale (5000 replicas) still shows in the workload's status.
MAX_TWIN_PODS = 25
# Health states in which every materialised pod is ready.
_ALL_READY = ("running", "elevated_error_rate")


def template_key(template: Body) -> str:
    """Identity of a pod template, ignoring the hash label the controller adds."""
    clean = copy.deepcopy(template)
    clean.get("metadata", {}).get("labels", {}).pop("pod-template-hash", None)
    return json.dumps(clean, sort_keys=True)


def owned_by(obj: Body, uid: str) -> bool:
    """Whether `obj` has an owner reference to the object with this uid."""
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])


def revision_of(obj: Body | None) -> int:
    """The rollout revision annotated on a ReplicaSet (0 when absent)."""
    return int(((obj or {}).get("metadata", {}).get("annotations") or {}).get(REVISION, "0"))


def replica_set_for(dep: Body, revision: int) -> Body:
    """The ReplicaSet the Deployment controller would create for the Deployment's current template."""
    ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
    template = copy.deepcopy(dep["spec"]["template"])
    template_hash = pod_template_hash(template_key(template))
    template["metadata"].setdefault("labels", {})["pod-template-hash"] = template_hash
    selector = copy.deepcopy(dep["spec"]["selector"])
    selector.setdefault("matchLabels", {})["pod-template-hash"] = template_hash
    replicas = int(dep["spec"].get("replicas", 1))
    return {
        "metadata": {
            "name": f"{name}-{template_hash}",
            "namespace": ns,
            "labels": template["metadata"]["labels"],
            "annotations": {
                REVISION: str(revision),
                "deployment.kubernetes.io/desired-replicas": str(replicas),
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": name,
                    "uid": dep["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    }


SCALED_DOWN_STATUS: Body = {
    "replicas": 0,
    "readyReplicas": 0,
    "availableReplicas": 0,
    "fullyLabeledReplicas": 0,
}


def ready_replicas(desired: int, state: str, waiting: int) -> int:
    """Ready pods of a workload in this health state, `waiting` of them still without a node."""
    ready = min(desired, MAX_TWIN_PODS) if state in _ALL_READY else 0
    if state == "degraded":
        ready = max(desired - 1, 0)
    return max(ready - waiting, 0)


def replica_set_status(current: Body, desired: int, ready: int) -> Body:
    """The status of a Deployment's current ReplicaSet."""
    return {
        "replicas": desired,
        "fullyLabeledReplicas": desired,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": current["metadata"].get("generation", 1),
    }


def deployment_status(dep: Body, desired: int, ready: int, now: str) -> Body | None:
    """The Deployment's new status, or None when the one it has already says the same."""
    previous = dep.get("status") or {}
    available = ready >= max(desired - max(desired // 4, 1 if desired > 1 else 0), 1) if desired else True
    status: Body = {
        "observedGeneration": dep["metadata"].get("generation", 1),
        "replicas": desired,
        "updatedReplicas": desired,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": max(desired - ready, 0),
    }
    conditions = [dict(c) for c in previous.get("conditions") or []]
    for cond in conditions:
        if cond.get("type") == "Available" and (cond.get("status") == "True") != available:
            cond.update(
                status=str(available),
                lastTransitionTime=now,
                lastUpdateTime=now,
                reason="MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            )
    status["conditions"] = conditions
    unchanged = all(previous.get(k, 0) == v for k, v in status.items() if k != "conditions")
    if unchanged and previous.get("conditions") == conditions:
        return None
    return status
