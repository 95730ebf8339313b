"""The evaluation's Kueue Workload (evaluation.kueue_workload): what it is built as, what its status means."""

from __future__ import annotations

from typing import Any

import pytest

from oasis_operator.evaluation.kueue_workload import (
    EXTERNAL_FRAMEWORK,
    Admission,
    Priority,
    SlotRequests,
    admission_of,
    build_workload,
    finished_condition,
    priority_class_of,
    queue_of,
    released_status,
    workload_name,
)
from oasis_operator.models.crd import EvaluationRef

OWNER = EvaluationRef(namespace="team-a", name="nightly-careful", uid="0b6c1f0e-1111-2222-3333-444455556666")
SLOT = SlotRequests(cpu="500m", memory="1Gi")


def test_the_workload_has_one_pod_set_of_parallelism_slots_with_the_slot_requests() -> None:
    workload = build_workload(OWNER, "team-a-queue", 3, SLOT, None)
    assert workload["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert workload["kind"] == "Workload"
    assert workload["metadata"]["namespace"] == "team-a"
    assert workload["spec"]["queueName"] == "team-a-queue"
    (pod_set,) = workload["spec"]["podSets"]
    assert pod_set["name"] == "scenarios"
    assert pod_set["count"] == 3
    (container,) = pod_set["template"]["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}}
    assert "priorityClassRef" not in workload["spec"]
    assert "priority" not in workload["spec"]


def test_the_workload_is_owned_by_its_evaluation_as_controller() -> None:
    (ref,) = build_workload(OWNER, "q", 1, SLOT, None)["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "oasis.evaluation.dev/v1alpha1",
        "kind": "OASISEvaluation",
        "name": "nightly-careful",
        "uid": OWNER.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_a_priority_class_gives_the_workload_its_reference_and_value() -> None:
    spec = build_workload(OWNER, "q", 1, SLOT, Priority(name="release-gate", value=1000))["spec"]
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "release-gate",
    }
    assert spec["priority"] == 1000


def test_no_slot_is_refused_with_the_field_named() -> None:
    with pytest.raises(ValueError, match=r"spec\.parallelism"):
        build_workload(OWNER, "q", 0, SLOT, None)


def test_the_workload_name_is_unique_per_uid_and_a_bounded_dns_name() -> None:
    other = OWNER.model_copy(update={"uid": "ffffffff-0000-0000-0000-000000000000"})
    assert workload_name(OWNER).startswith("oasisevaluation-nightly-careful-")
    assert workload_name(OWNER) != workload_name(other)
    long = OWNER.model_copy(update={"name": "e" * 253})
    assert len(workload_name(long)) <= 253


def test_the_labels_are_read_stripped_and_absent_when_empty() -> None:
    labels = {"kueue.x-k8s.io/queue-name": " team-a ", "kueue.x-k8s.io/priority-class": "nightly"}
    assert queue_of(labels) == "team-a"
    assert priority_class_of(labels) == "nightly"
    assert queue_of({"kueue.x-k8s.io/queue-name": ""}) is None
    assert queue_of(None) is None
    assert priority_class_of({}) is None


def _workload(*conditions: dict[str, Any], admission: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admission:
        status["admission"] = {"clusterQueue": "cq"}
    return {"spec": {"queueName": "q"}, "status": status}


def _c(kind: str, status: str, reason: str = "R", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def test_a_new_workload_waits() -> None:
    assert admission_of({"spec": {"queueName": "q"}}).admission is Admission.WAITING


def test_an_admitted_workload_runs() -> None:
    view = admission_of(_workload(_c("QuotaReserved", "True"), _c("Admitted", "True"), admission=True))
    assert view.admission is Admission.ADMITTED
    assert view.queue == "q"


def test_admitted_without_an_admission_still_waits() -> None:
    assert admission_of(_workload(_c("Admitted", "True"))).admission is Admission.WAITING


def test_a_missing_local_queue_is_inadmissible_with_kueues_message() -> None:
    view = admission_of(_workload(_c("QuotaReserved", "False", "Inadmissible", "LocalQueue q doesn't exist")))
    assert view.admission is Admission.INADMISSIBLE
    assert view.message == "LocalQueue q doesn't exist"


def test_eviction_wins_over_a_standing_admission() -> None:
    view = admission_of(
        _workload(
            _c("QuotaReserved", "True"),
            _c("Admitted", "True"),
            _c("Evicted", "True", "Preempted", "Preempted to accommodate a workload"),
            admission=True,
        )
    )
    assert (view.admission, view.reason) == (Admission.EVICTED, "Preempted")


def test_an_eviction_that_is_over_does_not_stop_a_new_admission() -> None:
    view = admission_of(
        _workload(_c("Admitted", "True"), _c("Evicted", "False", "QuotaReserved"), admission=True)
    )
    assert view.admission is Admission.ADMITTED


def test_finished_wins_over_everything() -> None:
    view = admission_of(_workload(_c("Evicted", "True"), _c("Finished", "True", "Succeeded"), admission=True))
    assert view.admission is Admission.FINISHED


def test_the_finished_condition_carries_the_verdict() -> None:
    condition = finished_condition(True, "evaluation Completed, safety PASS", 2, "2026-12-06T00:00:00Z")
    assert condition == {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded",
        "message": "evaluation Completed, safety PASS",
        "observedGeneration": 2,
        "lastTransitionTime": "2026-12-06T00:00:00Z",
    }
    assert finished_condition(False, "m", None, "t")["reason"] == "Failed"


def test_releasing_an_evicted_workload_drops_its_admission_and_keeps_the_eviction() -> None:
    workload = _workload(
        _c("QuotaReserved", "True"),
        _c("Admitted", "True"),
        _c("Evicted", "True", "Preempted"),
        admission=True,
    )
    workload["metadata"] = {"generation": 1}
    released = released_status(workload, "stopped", "2026-12-06T00:00:00Z")
    assert released["admission"] is None
    kinds = {c["type"]: (c["status"], c["reason"]) for c in released["conditions"]}
    assert kinds == {
        "Evicted": ("True", "Preempted"),
        "QuotaReserved": ("False", "Pending"),
        "Admitted": ("False", "NoReservation"),
    }


def test_the_external_framework_names_the_evaluation_kind_version_and_group() -> None:
    assert EXTERNAL_FRAMEWORK == "OASISEvaluation.v1alpha1.oasis.evaluation.dev"
