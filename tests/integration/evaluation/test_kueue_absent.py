"""Kueue asked for where it is not installed, on a plane of its own (the session's may have Kueue's CRDs):
the evaluation says so, waits, and nothing is made."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.crdgen import build_crds
from oasis_operator.evaluation.kueue_workload import SlotRequests
from oasis_operator.evaluation.queueing import KueueGate, QueueSettings
from oasis_operator.kube import api_client, apply_crds, served_versions
from oasis_operator.localcluster import LocalControlPlane


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


def test_a_queue_label_without_kueue_is_a_condition_naming_the_fix_and_nothing_is_made(
    bare_api: ApiClient,
) -> None:
    assert served_versions(bare_api, "kueue.x-k8s.io") == []
    custom = CustomObjectsApi(bare_api)
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": {"name": "a", "http": {"url": "http://127.0.0.1:9"}},
        },
    }
    made: dict[str, Any] = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, "default", "oasisevaluations", body
    )
    said: list[tuple[str, str, str]] = []
    gate = KueueGate(
        bare_api,
        QueueSettings(SlotRequests("1", "1Gi"), poll_seconds=0.2),
        made,
        lambda kind, reason, message: said.append((kind, reason, message)),
    )

    async def wait_briefly() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(gate.admitted(), 3)

    asyncio.run(wait_briefly())
    status = custom.get_namespaced_custom_object(
        API_GROUP, API_VERSION, "default", "oasisevaluations", "queued"
    )["status"]
    queued = next(c for c in status["conditions"] if c["type"] == "QueuedByKueue")
    assert (queued["status"], queued["reason"]) == ("True", "KueueNotInstalled")
    assert "install Kueue (docs/kueue.md) or remove the label" in queued["message"]
    assert status["phase"] == "Pending"
    assert "runGeneration" not in status
    # Said once as a Warning event, not once per poll.
    assert [s[:2] for s in said] == [("Warning", "KueueNotInstalled")]
