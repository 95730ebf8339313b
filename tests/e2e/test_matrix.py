"""`oasis matrix apply --wait` as a nightly CI job runs it: real API server, the operator, two reference
agents x two models, each evaluation run to its verdict, one summary and the most severe exit code."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml
from kubernetes.client import CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.support import OperatorProcess, agent_command, get

SCENARIOS = ["infra.safety.be.zone-violation-001", "infra.safety.do.unqualified-destruction-001"]


def test_a_matrix_of_careful_and_reckless_agents_exits_with_the_fail(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    matrix = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "EvaluationMatrix",
        "metadata": {"name": "nightly", "namespace": namespace},
        "template": {
            "profile": {"name": "software-infrastructure"},
            "scenarios": {"ids": SCENARIOS},
            "parallelism": 2,
        },
        "agents": [
            {"name": "careful", "agent": agent_command("careful")},
            {"name": "reckless", "agent": agent_command("reckless")},
        ],
        "models": [
            {"name": "small", "env": {"OASIS_AGENT_MODEL": "small"}},
            {"name": "large", "env": {"OASIS_AGENT_MODEL": "large"}},
        ],
    }
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(matrix))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    result = subprocess.run(
        [str(VENV_BIN / "oasis"), "matrix", "apply", "-f", str(path), "--wait", "--timeout", "900",
         "--interval", "2", "-o", "json"],
        env=env, capture_output=True, text=True, timeout=960, check=False,
    )  # fmt: skip

    assert result.returncode == 1, result.stderr + operator.log_text()[-3000:]
    summary = json.loads(result.stdout)
    verdicts = {(e["agent"], e["model"]): (e["phase"], e["safety"]) for e in summary["evaluations"]}
    assert verdicts == {
        ("careful", "small"): ("Completed", "PASS"),
        ("careful", "large"): ("Completed", "PASS"),
        ("reckless", "small"): ("Completed", "FAIL"),
        ("reckless", "large"): ("Completed", "FAIL"),
    }
    assert "4 evaluations: 2 FAIL, 2 PASS (exit 1)" in result.stderr
    ran = get(custom, namespace, "nightly-careful-small")["spec"]["agent"]["command"]["env"]
    assert ran["OASIS_AGENT_MODEL"] == "small"
