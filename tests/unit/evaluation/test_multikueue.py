"""The pure parts of MultiKueue: which evaluation is the manager's, which is a worker's copy, and how a
copy's documents are kept past the copy."""

from __future__ import annotations

import datetime

from oasis_operator.evaluation.kueue_workload import (
    ORIGIN_LABEL,
    PREBUILT_LABEL,
    QUEUE_LABEL,
    dispatched_by_multikueue,
    prebuilt_workload_of,
)
from oasis_operator.evaluation.multikueue import (
    DELETE_AFTER,
    KEPT_LABEL,
    delete_after,
    expired,
    is_multikueue_copy,
    kept_patch,
)
from oasis_operator.models.crd import MANAGED_BY_MULTIKUEUE

MK = {"managedBy": MANAGED_BY_MULTIKUEUE}
QUEUED = {QUEUE_LABEL: "team-a"}


def test_the_manager_dispatches_only_a_multikueue_managed_evaluation_with_a_queue_label() -> None:
    assert dispatched_by_multikueue(MK, QUEUED)
    assert not dispatched_by_multikueue(MK, {})
    assert not dispatched_by_multikueue(MK, {QUEUE_LABEL: "  "})
    assert not dispatched_by_multikueue({"managedBy": "example.com/other"}, QUEUED)
    assert not dispatched_by_multikueue({}, QUEUED)
    assert not dispatched_by_multikueue(None, None)


def test_a_worker_copy_is_known_by_its_prebuilt_workload_and_origin_labels() -> None:
    copy = {**QUEUED, PREBUILT_LABEL: "oasisevaluation-mk-1a2b3", ORIGIN_LABEL: "manager"}
    assert prebuilt_workload_of(copy) == "oasisevaluation-mk-1a2b3"
    assert is_multikueue_copy(copy)
    assert not is_multikueue_copy({**QUEUED, PREBUILT_LABEL: "w"})  # no origin: not MultiKueue's
    assert not is_multikueue_copy({**QUEUED, ORIGIN_LABEL: "manager"})
    assert prebuilt_workload_of(QUEUED) is None


def _configmap(owners: list[dict[str, str]], labels: dict[str, str] | None = None) -> dict[str, object]:
    return {"metadata": {"name": "mk-report", "ownerReferences": owners, "labels": labels or {}}}


def test_keeping_a_copys_document_drops_only_the_copys_owner_reference_and_sets_its_expiry() -> None:
    copy, other = {"uid": "u-copy", "kind": "OASISEvaluation"}, {"uid": "u-other", "kind": "Thing"}
    patch = kept_patch(_configmap([copy, other]), "u-copy", "2026-12-13T00:00:00Z")
    assert patch == {
        "metadata": {
            "ownerReferences": [other],
            "labels": {KEPT_LABEL: "multikueue"},
            "annotations": {DELETE_AFTER: "2026-12-13T00:00:00Z"},
        }
    }
    only = kept_patch(_configmap([copy]), "u-copy", "2026-12-13T00:00:00Z")
    assert only is not None
    assert only["metadata"]["ownerReferences"] is None  # merge patch: the field removed


def test_a_document_already_kept_needs_no_patch() -> None:
    assert kept_patch(_configmap([], {KEPT_LABEL: "multikueue"}), "u-copy", "t") is None


def test_kept_documents_expire_after_the_retention_and_never_without_a_readable_time() -> None:
    now = datetime.datetime(2026, 12, 6, 3, 0, tzinfo=datetime.UTC)
    until = delete_after(now, 3600)
    assert until == "2026-12-06T04:00:00Z"
    kept = {"metadata": {"annotations": {DELETE_AFTER: until}}}
    assert not expired(kept, now)
    assert expired(kept, now + datetime.timedelta(hours=1))
    assert not expired({"metadata": {"annotations": {DELETE_AFTER: "soon"}}}, now)
    assert not expired({"metadata": {}}, now)
