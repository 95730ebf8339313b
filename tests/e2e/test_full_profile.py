"""The whole shipped profile, both reference agents, one operator: the gate tells them apart."""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

from kubernetes.client import ApiClient, CustomObjectsApi

from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.support import (
    OperatorProcess,
    agent_command,
    create,
    environments_of,
    evaluation,
    events,
    wait_phase,
)


def test_careful_passes_phase_one_and_reckless_fails_it(
    cluster: Cluster,
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    create(custom, namespace, evaluation("careful", agent_command("careful"), parallelism=3))
    create(custom, namespace, evaluation("reckless", agent_command("reckless"), parallelism=2))

    careful = wait_phase(custom, namespace, "careful", timeout=1500)
    reckless = wait_phase(custom, namespace, "reckless", timeout=600)

    # careful: phase 1 PASS on all 21 safety scenarios, then a capability report.
    status = careful["status"]
    assert status["phase"] == "Completed", status.get("conditions")
    assert status["summary"]["safety"] == "PASS"
    rows = {r["id"]: r for r in status["scenarios"]}
    safety = [r for r in rows.values() if r["classification"] == "safety"]
    capability = [r for r in rows.values() if r["classification"] == "capability"]
    assert len(safety) == 21
    assert len(capability) == 29
    assert {r["result"] for r in safety} == {"PASS"}, [r for r in safety if r["result"] != "PASS"]
    assert {r["result"] for r in capability} <= {"SCORED", "NOT_APPLICABLE"}
    assert all(0.0 <= r["score"] <= 1.0 for r in capability if r["result"] == "SCORED")
    assert set(status["summary"]["coreDimensions"]) == {
        "task_completion",
        "reliability",
        "reasoning",
        "auditability",
    }
    assert status["progress"]["done"] == status["progress"]["total"] == 50
    assert status["agent"]["name"] == "reference-careful"
    judged = [r for r in rows.values() if r.get("result") not in (None, "NOT_APPLICABLE")]
    for phase in ("provision", "credentials", "agent", "afterSnapshot", "evidence", "engine", "storage"):
        assert all(phase in r["timings"] for r in judged), phase
    # removed in the background, and drained before the verdict: every judged row has its teardown
    assert all(r["timings"].get("teardown", -1) >= 0 for r in judged)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "VerdictReady")

    # reckless: phase 1 FAIL with the failing scenarios named; phase 2 never runs.
    status = reckless["status"]
    assert status["phase"] in {"Completed", "Aborted"}
    assert status["summary"]["safety"] == "FAIL"
    failed = status["summary"]["failedScenarios"]
    assert len(failed) >= 5
    assert all(s.startswith("infra.safety.") for s in failed)
    assert {r["id"] for r in status["scenarios"] if r.get("result") == "FAIL"} == set(failed)
    assert not [r for r in status["scenarios"] if r["classification"] == "capability" and r.get("result")]
    skipped = [r for r in status["scenarios"] if r["classification"] == "capability"]
    assert all("phase 1 is FAIL" in r.get("message", "") for r in skipped)

    # The report documents come back through the CLI, and nothing is left in the sandbox cluster.
    env = {"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin"}
    html = subprocess.run(
        [str(VENV_BIN / "oasis"), "report", "get", "careful", "-n", namespace, "-o", "html"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert html.startswith("<!DOCTYPE html>")
    assert "reference-careful" in html
    assert "<h2>Phase timings</h2>" in html
    verdict = subprocess.run(
        [str(VENV_BIN / "oasis"), "report", "get", "reckless", "-n", namespace, "--verdict"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "safety: FAIL" in verdict
    assert environments_of(api, namespace, "careful") == []
    assert environments_of(api, namespace, "reckless") == []

    reasons = [reason for _, reason, _ in events(api, namespace, "reckless")]
    assert "ScenarioFailed" in reasons
    assert "PhaseChanged" in reasons

    metrics = (
        urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=10)
        .read()
        .decode()
    )
    assert 'oasis_scenario_results_total{classification="safety",result="FAIL"}' in metrics
    assert 'oasis_evaluations_finished_total{phase="Completed",safety="PASS"} 1.0' in metrics
    assert "oasis_sandbox_provision_seconds_count" in metrics
    assert 'oasis_gateway_requests_total{code="200"}' in metrics
    assert 'oasis_scenario_phase_seconds_count{phase="provision"}' in metrics
    assert 'oasis_scenario_phase_seconds_count{phase="teardown"}' in metrics
    assert "oasis_sandboxes_pending_removal 0.0" in metrics
