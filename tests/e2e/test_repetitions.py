"""Repeated runs (spec.repetitions): an agent that violates on one run in three FAILs and is flagged flaky,
in the status, the verdict and the report, and every run's evidence is stored and replays."""

from __future__ import annotations

import json

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator.engine.replay import replay_results
from oasis_operator.evaluation.store import DocumentStore, unpack
from oasis_operator.kube import request, resource_path
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.profiles import default_profile_path, load_profile
from tests.agents.intermittent import IntermittentAgent
from tests.cluster_fixtures import VENV_BIN
from tests.e2e.support import OperatorProcess, create, evaluation, wait_phase

# A safety scenario `careful` passes and `reckless` fails (it deletes what it is asked to).
SCENARIO = "infra.safety.do.unqualified-destruction-001"


def test_one_violating_run_in_three_fails_the_scenario_and_flags_it_flaky(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    operator: OperatorProcess,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OASIS_KUBECTL", str(VENV_BIN / "kubectl"))
    with IntermittentAgent(every=3, bad=2) as agent:
        spec_agent = {"name": "intermittent", "http": {"url": agent.url, "timeoutSeconds": 120}}
        body = evaluation("thrice", spec_agent, scenarios={"ids": [SCENARIO]}, repetitions=3)
        create(custom, namespace, body)
        obj = wait_phase(custom, namespace, "thrice", timeout=600)
    assert agent.policies == ["careful", "reckless", "careful"]
    status = obj["status"]
    assert status["phase"] == "Completed", status
    (row,) = status["scenarios"]
    assert (row["id"], row["result"], row["runs"], row["flaky"]) == (SCENARIO, "FAIL", "PFP", True), row
    assert status["progress"]["done"] == status["progress"]["total"] == 3
    assert status["progress"]["failed"] == 1
    assert status["summary"]["safety"] == "FAIL"
    assert status["summary"]["failedScenarios"] == [SCENARIO]
    assert status["summary"]["flakyScenarios"] == [SCENARIO]

    stored = [
        request(api, "GET", resource_path("ConfigMap", namespace, n)) for n in status["reportConfigMaps"]
    ]
    files = unpack(stored)
    verdict = json.loads(files["verdict.json"])["verdict"]
    assert verdict["safety"] == "FAIL"
    repetitions = verdict["metadata"]["repetitions"]
    assert repetitions["runs_per_scenario"] == 3
    assert repetitions["flaky"] == [SCENARIO]
    assert repetitions["pass_hat_k"] == {"met": 0, "of": 1}
    assert repetitions["pass_at_k"] == {"met": 1, "of": 1}
    report = json.loads(files["report.json"])["report"]
    (result,) = [r for r in report["scenarios"] if r["scenario_id"] == SCENARIO]
    assert [r["outcome"] for r in result["repetitions"]["runs"]] == ["PASS", "FAIL", "PASS"]
    assert 'data-chart="spread-chart"' in files["report.html"]

    # Every run's result and bundle is stored in a set of its own, and replaying them gives the same.
    sets = DocumentStore(api).read_all(namespace, obj["metadata"]["uid"])
    runs = [sets[f"scenario-00-run-{n:02d}"] for n in (1, 2, 3)]
    assert all({"result.json", "bundle.json"} <= set(files) for files in runs)
    bundles = [EvidenceBundle.model_validate_json(files["bundle.json"]) for files in runs]
    (replayed,) = replay_results(bundles, load_profile(default_profile_path()))
    assert replayed.outcome.value == "FAIL"
    assert replayed.repetitions is not None
    assert [r.outcome for r in replayed.repetitions.runs] == ["PASS", "FAIL", "PASS"]
