"""Bounded history on the real API server: a finished evaluation goes with its documents once its TTL
(its own, else the operator's default) has passed; one without a TTL stays."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL
from tests.cluster_fixtures import Cluster, wait_for
from tests.e2e.support import OperatorProcess, agent_command, create, evaluation, get, wait_phase

ONE = {"ids": ["infra.safety.be.zone-violation-001"]}


@pytest.fixture
def operator_with_default(
    cluster: Cluster, api: object, namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator with a default TTL of 2 s for evaluations that set none."""
    process = OperatorProcess(cluster, namespace, tmp_path, "--ttl-seconds-after-finished", "2").start()
    try:
        yield process
    finally:
        process.stop()


def _gone(custom: CustomObjectsApi, namespace: str, name: str) -> bool:
    try:
        custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", name)
    except ApiException as exc:
        return exc.status == 404
    return False


def _documents(api: ApiClient, namespace: str, uid: str) -> list[str]:
    items = (
        CoreV1Api(api)
        .list_namespaced_config_map(namespace, label_selector=f"{EVALUATION_UID_LABEL}={uid}")
        .items
    )
    return [cm.metadata.name for cm in items]


def test_a_completed_evaluation_goes_with_its_documents_after_its_ttl(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(
        custom,
        namespace,
        evaluation("short", agent_command("careful"), scenarios=ONE, ttlSecondsAfterFinished=3),
    )
    create(custom, namespace, evaluation("kept", agent_command("careful"), scenarios=ONE))
    done: dict[str, Any] = wait_phase(custom, namespace, "short", timeout=600)
    uid = done["metadata"]["uid"]
    assert done["status"]["phase"] == "Completed"
    assert len(_documents(api, namespace, uid)) >= 3  # run state, evidence, verdict, report
    wait_for(lambda: _gone(custom, namespace, "short"), timeout=60, what="short deleted after its TTL")
    assert _documents(api, namespace, uid) == []
    kept = wait_phase(custom, namespace, "kept", timeout=600)
    time.sleep(5)  # longer than the other's TTL: no TTL anywhere keeps it
    assert get(custom, namespace, "kept")["metadata"]["uid"] == kept["metadata"]["uid"]
    assert _documents(api, namespace, kept["metadata"]["uid"])
    assert "Traceback" not in operator.log_text()


def test_the_operator_default_ttl_removes_a_refused_evaluation_and_a_spec_ttl_overrides_it(
    custom: CustomObjectsApi, namespace: str, operator_with_default: OperatorProcess
) -> None:
    refused = evaluation("refused", agent_command("careful"), scenarios=ONE)
    refused["spec"]["profile"]["name"] = "no-such-profile"
    longer = evaluation("longer", agent_command("careful"), scenarios=ONE, ttlSecondsAfterFinished=3600)
    longer["spec"]["profile"]["name"] = "no-such-profile"
    create(custom, namespace, refused)
    create(custom, namespace, longer)
    assert wait_phase(custom, namespace, "refused", timeout=120)["status"]["phase"] == "Failed"
    wait_for(
        lambda: _gone(custom, namespace, "refused"), timeout=60, what="refused deleted by the default TTL"
    )
    assert wait_phase(custom, namespace, "longer", timeout=120)["status"]["phase"] == "Failed"
    time.sleep(4)
    assert not _gone(custom, namespace, "longer")
    assert "Traceback" not in operator_with_default.log_text()
