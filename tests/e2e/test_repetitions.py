"""Repeated runs (spec.repetitions): an agent that violates on one run in three FAILs and is flagged flaky,
in the status, the verdict and the report, and every run's evidence is stored and replays; a restart
resumes without running the finished runs again."""

from __future__ import annotations

import json
import signal

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator.engine.replay import replay_results
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL, SET_LABEL, DocumentStore, unpack
from oasis_operator.kube import request, resource_path
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.profiles import default_profile_path, load_profile
from tests.agents.intermittent import IntermittentAgent
from tests.cluster_fixtures import VENV_BIN
from tests.e2e.support import (
    OperatorProcess,
    create,
    environments_of,
    evaluation,
    get,
    wait_done,
    wait_phase,
)

# A safety scenario `careful` passes and `reckless` fails (it deletes what it is asked to).
SCENARIO = "infra.safety.do.unqualified-destruction-001"


@pytest.fixture(autouse=True)
def _agent_kubectl(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process test agent acts with the venv's kubectl, as the command agents do."""
    monkeypatch.setenv("OASIS_KUBECTL", str(VENV_BIN / "kubectl"))


def test_one_violating_run_in_three_fails_the_scenario_and_flags_it_flaky(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    operator: OperatorProcess,
) -> None:
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


def test_a_restart_resumes_a_repeated_evaluation_without_rerunning_finished_runs(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    operator: OperatorProcess,
) -> None:
    ids = [SCENARIO, "infra.safety.de.direct-secret-request-001"]
    with IntermittentAgent(every=1000, bad=0) as agent:  # careful on every call
        spec_agent = {"name": "intermittent", "http": {"url": agent.url, "timeoutSeconds": 120}}
        create(custom, namespace, evaluation("again", spec_agent, scenarios={"ids": ids}, repetitions=3))
        wait_done(custom, namespace, "again", 2)
        operator.stop(signal.SIGKILL)  # no chance to clean up: the next start must
        rows = get(custom, namespace, "again")["status"]["scenarios"]
        uid = get(custom, namespace, "again")["metadata"]["uid"]
        finished = {
            (index, run): _set_version(api, namespace, uid, f"scenario-{index:02d}-run-{run:02d}")
            for index, row in enumerate(rows)
            for run, letter in enumerate(row["runs"], 1)
            if letter != "-"
        }
        assert len(finished) >= 2
        calls_before = len(agent.policies)
        operator.start()
        status = wait_phase(custom, namespace, "again", timeout=900)["status"]
    assert status["phase"] == "Completed", status
    assert status["progress"]["done"] == status["progress"]["total"] == 6
    assert [row["runs"] for row in status["scenarios"]] == ["PPP", "PPP"], [
        (r["id"], r.get("message")) for r in status["scenarios"]
    ]
    assert status["summary"]["safety"] == "PASS"
    for (index, run), version in finished.items():
        name = f"scenario-{index:02d}-run-{run:02d}"
        assert _set_version(api, namespace, uid, name) == version, f"{name} ran again"
    # Only the runs not finished ran after the restart (one may have been in flight: parallelism 1).
    assert len(agent.policies) - calls_before <= 6 - len(finished) + 1
    assert environments_of(api, namespace, "again") == []


def _set_version(api: ApiClient, namespace: str, uid: str, doc_set: str) -> str:
    """The resourceVersion of a document set's first ConfigMap (it changes when the set is rewritten)."""
    query = {"labelSelector": f"{EVALUATION_UID_LABEL}={uid},{SET_LABEL}={doc_set}"}
    items = request(api, "GET", resource_path("ConfigMap", namespace), query=query)["items"]
    assert items, f"no ConfigMap for {doc_set}"
    return str(items[0]["metadata"]["resourceVersion"])
