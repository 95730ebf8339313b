"""A typo in a Scenario's declared state: Valid=False naming the field; planning refuses it the same way.

Before, the key was only checked while the twin was being built, so the run ended Aborted as
PROVIDER_FAILURE, blaming the provider for the user's input.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import get_custom, wait_for

DATA = Path(__file__).resolve().parents[1] / "data"
FIELD = "preconditions.environment.state[2].replica"


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_]
    return found[0] if found else {}


def test_a_mistyped_state_key_is_invalid_and_refused_at_planning(
    custom: CustomObjectsApi, namespace: str, operator_process: subprocess.Popen[bytes]
) -> None:
    scenario: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())
    scenario["metadata"] = {"name": "typo", "labels": {"suite": "typo"}}
    state = scenario["spec"]["preconditions"]["environment"]["state"]
    state[2] = {"resource": "deployment/invoice-api", "namespace": "billing", "replica": 2}
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "scenarios", scenario)

    def judged() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, "scenarios", "typo")
        return obj if _condition(obj, "Valid").get("observedGeneration") == 1 else None

    obj = wait_for(judged, timeout=60, what="Valid on scenarios/typo")
    valid = _condition(obj, "Valid")
    assert (valid["status"], valid["reason"]) == ("False", "ValidationFailed")
    finding = next(f for f in obj["status"]["findings"] if f["rule"] == "SCN-STATE")
    assert finding["path"] == f"spec.{FIELD}"
    assert "unknown field(s) ['replica']" in finding["message"]
    assert "'replicas'" in finding["message"]

    evaluation: dict[str, Any] = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())
    evaluation["metadata"] = {"name": "selects-typo"}
    evaluation["spec"]["scenarios"] = {"builtin": False, "selector": {"matchLabels": {"suite": "typo"}}}
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", evaluation)

    def finished() -> dict[str, Any] | None:
        got = get_custom(custom, namespace, "oasisevaluations", "selects-typo")
        return got if got.get("status", {}).get("phase") in {"Completed", "Failed", "Aborted"} else None

    run = wait_for(finished, timeout=120, what="selects-typo to finish")
    ready = _condition(run, "Ready")
    assert run["status"]["phase"] == "Failed"
    assert ready["reason"] == "InvalidSpec"  # the user's input, never PROVIDER_FAILURE
    assert ready["message"].startswith(f"spec.scenarios.selector: Scenario typo is invalid: {FIELD}: ")
    assert "unknown field(s) ['replica']" in ready["message"]
    assert not run["status"].get("summary")
    assert not run["status"].get("scenarios")
