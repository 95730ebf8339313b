"""`oasis evaluate --wait` as a CI job runs it: real API server, the operator, reference agents."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import CustomObjectsApi

from tests.ci_schemas import sarif_errors, validate_junit
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.support import OperatorProcess, agent_command, evaluation, get

SCENARIOS = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.de.direct-secret-request-001",
    "infra.capability.da.single-signal-diagnosis-001",
]


def _file(directory: Path, name: str, policy: str, namespace: str) -> Path:
    body: dict[str, Any] = evaluation(
        name, agent_command(policy), scenarios={"ids": SCENARIOS}, parallelism=2
    )
    body["metadata"]["namespace"] = namespace
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def _oasis(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.Popen(
        [str(VENV_BIN / "oasis"), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 900) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_evaluate_wait_exits_with_the_verdict_and_writes_the_ci_formats(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    careful_file = _file(tmp_path, "ci-careful", "careful", namespace)
    reckless_file = _file(tmp_path, "ci-reckless", "reckless", namespace)
    junit, sarif = tmp_path / "careful.xml", tmp_path / "reckless.sarif"
    careful = _oasis(cluster, "evaluate", "-f", str(careful_file), "--wait", "--timeout", "900",
                     "-o", "junit", "--output-file", str(junit))  # fmt: skip
    reckless = _oasis(cluster, "evaluate", "-f", str(reckless_file), "--wait", "--timeout", "900",
                      "-o", "sarif", "--output-file", str(sarif))  # fmt: skip
    careful_code, _, careful_err = _finish(careful)
    reckless_code, _, reckless_err = _finish(reckless)

    # careful: PASS → exit 0, a schema-valid JUnit file, one case per scenario, no failure or error.
    assert careful_code == 0, careful_err + operator.log_text()[-3000:]
    assert f"oasis: {namespace}/ci-careful phase=" in careful_err
    assert "safety PASS (exit 0)" in careful_err
    text = junit.read_text(encoding="utf-8")
    validate_junit(text)
    root = ET.fromstring(text)  # noqa: S314 - the document is this project's own rendering
    rows = get(custom, namespace, "ci-careful")["status"]["scenarios"]
    assert sorted(c.attrib["name"] for c in root.iter("testcase")) == sorted(r["id"] for r in rows)
    assert (root.attrib["failures"], root.attrib["errors"]) == ("0", "0")
    capability = next(s for s in root.iter("testsuite") if s.attrib["name"] == "oasis.capability")
    names = {p.attrib["name"] for p in capability.iter("property")}
    assert "oasis.category.diagnostic-accuracy" in names

    # reckless: FAIL → exit 1, a schema-valid SARIF file with one result per FAIL row.
    assert reckless_code == 1, reckless_err + operator.log_text()[-3000:]
    document = json.loads(sarif.read_text(encoding="utf-8"))
    assert sarif_errors(document) == []
    status = get(custom, namespace, "ci-reckless")["status"]
    failed = sorted(r["id"] for r in status["scenarios"] if r.get("result") == "FAIL")
    assert failed
    assert failed == sorted(status["summary"]["failedScenarios"])
    run = document["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == failed
    uri = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.endswith("ci-reckless.yaml")

    # The same file again is refused before any verdict; the report comes back as a job summary.
    again = _finish(_oasis(cluster, "evaluate", "-f", str(careful_file), "--wait"), timeout=60)
    assert again[0] == 3, again[2]
    assert f"OASISEvaluation {namespace}/ci-careful already exists" in again[2]
    summary = _finish(_oasis(cluster, "report", "get", "ci-reckless", "-n", namespace, "-o", "markdown"), 60)
    assert summary[0] == 0, summary[2]
    assert summary[1].startswith("## OASIS safety verdict: FAIL\n")
    assert all(f"**{scenario}**" in summary[1] for scenario in failed)


def test_evaluate_timeout_exits_3_and_leaves_the_run_going(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    path = _file(tmp_path, "ci-slow", "careful", namespace)
    code, out, err = _finish(_oasis(cluster, "evaluate", "-f", str(path), "--wait", "--timeout", "1",
                                    "-o", "junit"), timeout=120)  # fmt: skip
    assert code == 3
    assert out == ""
    assert f"{namespace}/ci-slow reached no terminal phase in time" in err
    assert get(custom, namespace, "ci-slow")["metadata"]["name"] == "ci-slow"
