"""MultiKueue against a real API server: a worker keeps a finished copy's documents past the copy's
deletion (garbage collection does not take them) until their time is up; a manager without Kueue makes
nothing and writes nothing on the evaluation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.crdgen import build_crds
from oasis_operator.evaluation.kueue_workload import ORIGIN_LABEL, PREBUILT_LABEL, QUEUE_LABEL, SlotRequests
from oasis_operator.evaluation.multikueue import (
    DELETE_AFTER,
    KEPT_LABEL,
    keep_copy_documents,
    keep_manager_workload,
    remove_expired_documents,
)
from oasis_operator.evaluation.queueing import QueueSettings, Refused
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL, DocumentStore
from oasis_operator.kube import api_client, apply_crds
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.models.crd import MANAGED_BY_MULTIKUEUE, EvaluationRef
from tests.cluster_fixtures import wait_for

PLURAL = "oasisevaluations"


def _evaluation(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": {"name": "a", "http": {"url": "http://127.0.0.1:9"}},
            **spec,
        },
    }


def test_a_finished_copys_documents_outlive_its_deletion_until_they_expire(
    api: ApiClient, namespace: str
) -> None:
    custom, core = CustomObjectsApi(api), CoreV1Api(api)
    labels = {QUEUE_LABEL: "q", PREBUILT_LABEL: "oasisevaluation-copy-1a2b3", ORIGIN_LABEL: "manager"}
    made = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, _evaluation("copy", labels)
    )
    custom.patch_namespaced_custom_object_status(
        API_GROUP, API_VERSION, namespace, PLURAL, "copy", {"status": {"phase": "Completed"}}
    )
    owner = EvaluationRef.of(made)
    names = DocumentStore(api).write(owner, "report", {"report.json": "{}"})
    body = custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "copy")

    assert asyncio.run(keep_copy_documents(api, body, retention_seconds=3600)) == len(names)
    assert asyncio.run(keep_copy_documents(api, body, retention_seconds=3600)) == 0  # compare, then write
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "copy")
    wait_for(
        lambda: not custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)["items"],
        timeout=30,
        what="the copy gone",
    )
    time.sleep(3)  # the garbage collector has had its chance
    kept = core.list_namespaced_config_map(namespace, label_selector=f"{EVALUATION_UID_LABEL}={owner.uid}")
    assert sorted(cm.metadata.name for cm in kept.items) == sorted(names)
    assert all(not cm.metadata.owner_references for cm in kept.items)
    assert all(cm.metadata.labels[KEPT_LABEL] == "multikueue" for cm in kept.items)
    assert DocumentStore(api).read(namespace, owner.uid, "report") == {"report.json": "{}"}
    assert remove_expired_documents(api, namespace) == []  # an hour to go

    for cm in kept.items:
        core.patch_namespaced_config_map(
            cm.metadata.name, namespace, {"metadata": {"annotations": {DELETE_AFTER: "2000-01-01T00:00:00Z"}}}
        )
    assert sorted(remove_expired_documents(api, namespace)) == sorted(f"{namespace}/{n}" for n in names)
    assert DocumentStore(api).read(namespace, owner.uid, "report") == {}


def test_an_unfinished_or_ordinary_evaluations_documents_are_not_kept(api: ApiClient, namespace: str) -> None:
    custom = CustomObjectsApi(api)
    copy = {QUEUE_LABEL: "q", PREBUILT_LABEL: "w", ORIGIN_LABEL: "manager"}
    for name, labels in (("running-copy", copy), ("ordinary", {QUEUE_LABEL: "q"})):
        made = custom.create_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, _evaluation(name, labels)
        )
        DocumentStore(api).write(EvaluationRef.of(made), "report", {"report.json": "{}"})
        body = custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, name)
        assert asyncio.run(keep_copy_documents(api, body, retention_seconds=3600)) == 0


@pytest.fixture
def bare_api(tmp_path: Path) -> Iterator[ApiClient]:
    """A plane without Kueue, with the project's CRDs; stopped after the test."""
    plane = LocalControlPlane(run_dir=tmp_path / "plane", die_with_parent=True)
    plane.start()
    try:
        client = api_client(plane.kubeconfig)
        apply_crds(client, build_crds().values())
        yield client
    finally:
        plane.stop()


def test_a_manager_without_kueue_refuses_naming_the_fix_and_writes_nothing_on_the_evaluation(
    bare_api: ApiClient,
) -> None:
    custom = CustomObjectsApi(bare_api)
    body = _evaluation("dispatched", {QUEUE_LABEL: "team-a"}, managedBy=MANAGED_BY_MULTIKUEUE)
    made = custom.create_namespaced_custom_object(API_GROUP, API_VERSION, "default", PLURAL, body)
    said: list[tuple[str, str, str]] = []
    settings = QueueSettings(SlotRequests("1", "1Gi"), poll_seconds=0.2)
    with pytest.raises(Refused) as refused:
        asyncio.run(keep_manager_workload(bare_api, settings, made, lambda *event: said.append(event)))
    assert refused.value.reason == "KueueNotInstalled"
    assert "install Kueue (docs/kueue.md)" in str(refused.value)
    after = custom.get_namespaced_custom_object(API_GROUP, API_VERSION, "default", PLURAL, "dispatched")
    assert "status" not in after or not after["status"]
    assert after["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert said == []
