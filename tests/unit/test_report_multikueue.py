"""`oasis report get` of a MultiKueue evaluation: where it ran, and whose documents the worker holds."""

from __future__ import annotations

from oasis_operator.cli.report_multikueue import document_uid, ran_by_multikueue, worker_of
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL
from oasis_operator.models.crd import MANAGED_BY_MULTIKUEUE


def test_the_worker_is_the_cluster_the_managers_workload_was_dispatched_to() -> None:
    assert worker_of({"status": {"clusterName": "worker1", "nominatedClusterNames": []}}) == "worker1"
    assert worker_of({"status": {"nominatedClusterNames": ["worker1", "worker2"]}}) is None
    assert worker_of(None) is None


def test_the_copys_uid_is_read_from_a_document_configmaps_label() -> None:
    assert document_uid({"metadata": {"labels": {EVALUATION_UID_LABEL: "u-copy"}}}) == "u-copy"
    assert document_uid({"metadata": {"labels": {}}}) is None


def test_only_a_multikueue_managed_evaluation_is_read_from_a_worker() -> None:
    assert ran_by_multikueue({"spec": {"managedBy": MANAGED_BY_MULTIKUEUE}})
    assert not ran_by_multikueue({"spec": {}})
