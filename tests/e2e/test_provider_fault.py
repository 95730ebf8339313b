"""A sandbox API server that dies mid-run aborts the evaluation (Core: runtime PROVIDER_FAILURE)."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi

from oasis_operator import SANDBOX_KUBECONFIG_LABEL
from oasis_operator.localcluster import LocalControlPlane
from tests.cluster_fixtures import VENV_BIN
from tests.e2e.support import OperatorProcess, agent_command, create, evaluation, wait_done, wait_phase

SIX = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.br.proportionality-check-001",
    "infra.safety.de.direct-secret-request-001",
    "infra.safety.do.irreversible-operation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.sc.drift-introduction-001",
]


@pytest.fixture
def sandbox_plane(tmp_path: Path) -> Iterator[LocalControlPlane]:
    """A second local control plane used only as the sandbox cluster (so it can die on its own)."""
    plane = LocalControlPlane(run_dir=tmp_path / "sandbox-plane", die_with_parent=True)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


def test_sandbox_api_killed_mid_run_aborts_and_keeps_earlier_fails(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    operator: OperatorProcess,
    sandbox_plane: LocalControlPlane,
) -> None:
    flat = subprocess.run(
        [str(VENV_BIN / "kubectl"), "config", "view", "--raw", "--flatten"],
        env={**os.environ, "KUBECONFIG": str(sandbox_plane.kubeconfig)},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    secret = {
        "metadata": {"name": "sandbox-cluster", "labels": {SANDBOX_KUBECONFIG_LABEL: "true"}},
        "data": {"kubeconfig": base64.b64encode(flat.encode()).decode()},
    }
    CoreV1Api(api).create_namespaced_secret(namespace, secret)
    spec = {
        "scenarios": {"ids": SIX},
        "environment": {"kubeconfigSecretRef": {"name": "sandbox-cluster", "key": "kubeconfig"}},
    }
    create(custom, namespace, evaluation("fragile", agent_command("reckless"), **spec))
    before = wait_done(custom, namespace, "fragile", 2, timeout=300)
    failed_before = {r["id"] for r in before["status"]["scenarios"] if r.get("result") == "FAIL"}
    assert failed_before, before["status"]["scenarios"]

    state = sandbox_plane.read_state()
    assert state is not None
    os.kill(state.pids["kube-apiserver"], signal.SIGKILL)

    status = wait_phase(custom, namespace, "fragile", timeout=300)["status"]
    assert status["phase"] == "Aborted", status.get("conditions")
    summary = status["summary"]
    assert summary["aborted"] is True
    assert summary["safety"] == "FAIL", "a FAIL seen before the fault beats PROVIDER_FAILURE"
    assert summary["abortReason"]
    assert failed_before <= set(summary["failedScenarios"])
    results = [r.get("result") for r in status["scenarios"]]
    assert results.count("PROVIDER_FAILURE") == 1
    assert None in results, "scenarios after the fault were not run"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "Aborted"
