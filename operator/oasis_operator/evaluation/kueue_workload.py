"""An OASISEvaluation as a Kueue workload: the pure half (what the Workload is, what its status says).

An evaluation labelled `kueue.x-k8s.io/queue-name: <LocalQueue>` is admitted by Kueue before it runs
(`evaluation.queueing` does the API calls, docs/kueue.md tells the user). Its `Workload`
(`kueue.x-k8s.io/v1beta2`, the version Kueue 0.17 stores) is owned by the evaluation and has one pod set,
`scenarios`, of `spec.parallelism` pods, each one scenario slot with the operator's slot requests
(`OASIS_KUEUE_SLOT_CPU`, `OASIS_KUEUE_SLOT_MEMORY`). No pod is ever created from it: the pod set is the
evaluation's sandbox footprint, counted against the ClusterQueue's quota. The priority comes from the
label `kueue.x-k8s.io/priority-class`, a WorkloadPriorityClass resolved by the caller (Kueue's job
integrations do the same for a Job: the Workload carries the class and its value).

What the Workload's conditions mean to the evaluation (`admission_of`), in this order:
- `Finished` True: the evaluation is over (it marked it, `finished_condition`);
- `Evicted` True, or `QuotaReserved` True without `Admitted` True after it had been admitted: stop;
- `Admitted` True: run;
- `QuotaReserved` False with reason `Inadmissible`: Kueue's message says what to fix (a missing queue);
- anything else: waiting for quota.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.models.crd import EvaluationRef

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
WORKLOADS = "workloads"
PRIORITY_CLASSES = "workloadpriorityclasses"
LOCAL_QUEUES = "localqueues"
QUEUE_LABEL = f"{KUEUE_GROUP}/queue-name"
PRIORITY_LABEL = f"{KUEUE_GROUP}/priority-class"
# Labels on the Workload naming its evaluation (how the operator finds it, and a person too).
EVALUATION_LABEL = f"{API_GROUP}/evaluation"
POD_SET = "scenarios"
# How Kueue's configuration names the evaluation as an external framework (`integrations.externalFrameworks`).
EXTERNAL_FRAMEWORK = f"OASISEvaluation.{API_VERSION}.{API_GROUP}"
_NAME_LIMIT = 253
_LABEL_VALUE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class SlotRequests:
    """What one scenario slot asks of the quota: Kubernetes quantities (`OASIS_KUEUE_SLOT_*`)."""

    cpu: str
    memory: str


@dataclass(frozen=True)
class Priority:
    """A resolved WorkloadPriorityClass: its name and value."""

    name: str
    value: int


class Admission(enum.Enum):
    """What the Workload says the evaluation may do."""

    WAITING = "waiting"  # no quota yet
    INADMISSIBLE = "inadmissible"  # Kueue cannot admit it as it is (a missing LocalQueue or ClusterQueue)
    ADMITTED = "admitted"  # run
    EVICTED = "evicted"  # stop now, resume when admitted again
    FINISHED = "finished"  # over


@dataclass(frozen=True)
class WorkloadView:
    """The Workload's state as the evaluation needs it: what to do, and Kueue's own words for it."""

    admission: Admission
    reason: str = ""
    message: str = ""
    queue: str = ""


def queue_of(labels: Mapping[str, str] | None) -> str | None:
    """The LocalQueue the evaluation asks for (`kueue.x-k8s.io/queue-name`), None without the label."""
    value = (labels or {}).get(QUEUE_LABEL)
    return value.strip() if value and value.strip() else None


def priority_class_of(labels: Mapping[str, str] | None) -> str | None:
    """The WorkloadPriorityClass the evaluation asks for (`kueue.x-k8s.io/priority-class`), if any."""
    value = (labels or {}).get(PRIORITY_LABEL)
    return value.strip() if value and value.strip() else None


def workload_name(owner: EvaluationRef) -> str:
    """`oasisevaluation-<name>-<hash of the uid>`: unique per evaluation object, a DNS subdomain."""
    digest = hashlib.sha256(owner.uid.encode()).hexdigest()[:5]
    prefix = f"oasisevaluation-{owner.name}"[: _NAME_LIMIT - 6].rstrip("-.")
    return f"{prefix}-{digest}"


def owner_reference(owner: EvaluationRef) -> dict[str, Any]:
    """The evaluation as the Workload's controller: deleting the evaluation deletes the Workload."""
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def build_workload(
    owner: EvaluationRef, queue: str, parallelism: int, slot: SlotRequests, priority: Priority | None
) -> dict[str, Any]:
    """The evaluation's Workload: `parallelism` scenario slots in the LocalQueue `queue`."""
    if parallelism < 1:
        raise ValueError(f"spec.parallelism is {parallelism}: a Workload needs at least one slot")
    labels = (
        {EVALUATION_LABEL: owner.name} if _LABEL_VALUE.match(owner.name) and len(owner.name) <= 63 else {}
    )
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": [
            {
                "name": POD_SET,
                "count": parallelism,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "scenario",
                                "resources": {"requests": {"cpu": slot.cpu, "memory": slot.memory}},
                            }
                        ],
                    }
                },
            }
        ],
    }
    if priority is not None:
        spec["priorityClassRef"] = {
            "group": KUEUE_GROUP,
            "kind": "WorkloadPriorityClass",
            "name": priority.name,
        }
        spec["priority"] = priority.value
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "Workload",
        "metadata": {
            "name": workload_name(owner),
            "namespace": owner.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": spec,
    }


def _conditions(workload: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = workload.get("status") or {}
    return {str(c.get("type")): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}


def _true(conditions: Mapping[str, Mapping[str, Any]], kind: str) -> bool:
    return conditions.get(kind, {}).get("status") == "True"


def admission_of(workload: Mapping[str, Any]) -> WorkloadView:
    """What the Workload's status says the evaluation may do (the module docstring's order)."""
    conditions = _conditions(workload)
    queue = str((workload.get("spec") or {}).get("queueName") or "")

    def view(admission: Admission, kind: str) -> WorkloadView:
        condition = conditions.get(kind, {})
        return WorkloadView(
            admission, str(condition.get("reason") or ""), str(condition.get("message") or ""), queue
        )

    if _true(conditions, "Finished"):
        return view(Admission.FINISHED, "Finished")
    if _true(conditions, "Evicted"):
        return view(Admission.EVICTED, "Evicted")
    if _true(conditions, "Admitted") and (workload.get("status") or {}).get("admission"):
        return view(Admission.ADMITTED, "Admitted")
    reserved = conditions.get("QuotaReserved", {})
    if reserved.get("status") == "False" and reserved.get("reason") == "Inadmissible":
        return view(Admission.INADMISSIBLE, "QuotaReserved")
    return view(Admission.WAITING, "QuotaReserved")


def finished_condition(succeeded: bool, message: str, generation: int | None, now: str) -> dict[str, Any]:
    """The `Finished` condition the evaluation sets on its Workload when its run is over."""
    return {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded" if succeeded else "Failed",
        "message": message[:32768],
        "observedGeneration": generation or 0,
        "lastTransitionTime": now,
    }


def released_status(workload: Mapping[str, Any], message: str, now: str) -> dict[str, Any]:
    """The Workload status once an evicted evaluation has stopped its scenarios: quota given back.

    As Kueue's `UnsetQuotaReservationWithCondition` does for the jobs it manages: `QuotaReserved` and
    `Admitted` False, `status.admission` removed, so Kueue queues the workload again.
    """
    generation = (workload.get("metadata") or {}).get("generation") or 0
    kept = [
        dict(c)
        for c in (workload.get("status") or {}).get("conditions") or []
        if c.get("type") not in ("QuotaReserved", "Admitted")
    ]
    for kind, reason in (("QuotaReserved", "Pending"), ("Admitted", "NoReservation")):
        kept.append(
            {
                "type": kind,
                "status": "False",
                "reason": reason,
                "message": message,
                "observedGeneration": generation,
                "lastTransitionTime": now,
            }
        )
    return {"conditions": kept, "admission": None}
