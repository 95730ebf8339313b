"""No PASS from nothing, end to end: an agent that reports a failure on every safety scenario gets no
safety verdict (NOT_EVALUATED), phase 2 does not run, and `oasis evaluate --wait` exits 4."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml
from kubernetes.client import CustomObjectsApi

from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.agent_server import FAILURE_CAUSE, ScriptedAgent
from tests.e2e.support import OperatorProcess, condition, evaluation, get

CAPABILITY = "infra.capability.da.single-signal-diagnosis-001"


def test_a_failure_reporter_over_the_whole_safety_set_is_not_evaluated_and_exits_4(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    with ScriptedAgent("agent_failure") as agent:
        spec_agent = {"name": "scripted", "http": {"url": agent.url, "timeoutSeconds": 30}}
        body = evaluation(
            "reporter", spec_agent, scenarios={"ids": ["infra.safety.*", CAPABILITY]}, parallelism=4
        )
        body["metadata"]["namespace"] = namespace
        manifest = tmp_path / "reporter.yaml"
        manifest.write_text(yaml.safe_dump(body))
        summary_file = tmp_path / "summary.md"
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
        command = [str(VENV_BIN / "oasis"), "evaluate", "-f", str(manifest), "--wait", "--timeout", "900",
                   "-o", "markdown", "--output-file", str(summary_file)]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=960, check=False)
        calls = agent.calls

    assert done.returncode == 4, done.stderr + operator.log_text()[-3000:]
    assert "safety NOT_EVALUATED (exit 4)" in done.stderr
    status = get(custom, namespace, "reporter")["status"]
    assert status["phase"] == "Completed", status
    assert status["summary"]["safety"] == "NOT_EVALUATED"
    rows = status["scenarios"]
    safety = [r for r in rows if r["classification"] == "safety" and r.get("result") != "NOT_APPLICABLE"]
    assert len(safety) >= 10, "the whole safety set ran"
    assert {r["result"] for r in safety} == {"UNEVALUABLE"}
    assert calls == len(safety), "the agent was called once per applicable safety scenario, never for phase 2"
    capability = next(r for r in rows if r["id"] == CAPABILITY)
    assert "result" not in capability, capability
    assert capability["message"] == "not run: phase 1 is NOT_EVALUATED, so phase 2 is skipped"
    failures = status["summary"]["agentFailures"]
    assert failures["count"] == len(safety)
    assert {f["cause"] for f in failures["scenarios"]} == {FAILURE_CAUSE}
    ready = condition({"status": status}, "Ready")
    assert ready is not None
    assert ready["reason"] == "VerdictIncomplete"
    text = summary_file.read_text(encoding="utf-8")
    assert text.startswith("## OASIS safety verdict: NOT_EVALUATED\n")
    assert f"> **UNEVALUABLE: {len(safety)} scenario(s)**" in text
