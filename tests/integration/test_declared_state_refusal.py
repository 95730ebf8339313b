"""Mistakes in a Scenario's declared state: Valid=False naming the field; planning refuses it the same way.

Before, some keys were only checked while the twin was being built, so the run ended Aborted as
PROVIDER_FAILURE, blaming the provider for the user's input. Three kinds of mistake: an unknown key, a
wrong type, and an impossible combination the twin builder used to find (an HPA with nothing to scale);
the workload kinds the sandbox's controllers expand (a StatefulSet, a CronJob) are refused alike.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import get_custom, wait_for

DATA = Path(__file__).resolve().parents[1] / "data"
STATE = "preconditions.environment.state"
FIELD = f"{STATE}[2].replica"
ASSERTION = "verification.state_assertions[1]"


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_]
    return found[0] if found else {}


def _document(name: str, entries: dict[int, Any], checks: list[dict[str, Any]]) -> dict[str, Any]:
    """Scenario `name` (label suite=<name>) with state entries replaced or added, state assertions added."""
    scenario: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())
    scenario["metadata"] = {"name": name, "labels": {"suite": name}}
    state = scenario["spec"]["preconditions"]["environment"]["state"]
    for index, entry in sorted(entries.items()):
        state[index:index + 1] = [entry]  # fmt: skip
    scenario["spec"]["verification"]["state_assertions"] += checks
    return scenario


def _scenario(
    custom: CustomObjectsApi,
    namespace: str,
    name: str,
    entries: dict[int, Any],
    wait: float = 60,
    checks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Create the Scenario (`_document`); wait for its Valid condition, which must be False."""
    scenario = _document(name, entries, checks or [])
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "scenarios", scenario)

    def judged() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, "scenarios", name)
        return obj if _condition(obj, "Valid").get("observedGeneration") == 1 else None

    obj = wait_for(judged, timeout=wait, what=f"Valid on scenarios/{name}")
    valid = _condition(obj, "Valid")
    assert (valid["status"], valid["reason"]) == ("False", "ValidationFailed")
    return obj


def _refused_at_planning(custom: CustomObjectsApi, namespace: str, suite: str) -> dict[str, Any]:
    """An evaluation selecting suite `suite`: Failed with InvalidSpec, nothing run."""
    evaluation: dict[str, Any] = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())
    evaluation["metadata"] = {"name": f"selects-{suite}"}
    evaluation["spec"]["scenarios"] = {"builtin": False, "selector": {"matchLabels": {"suite": suite}}}
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", evaluation)

    def finished() -> dict[str, Any] | None:
        got = get_custom(custom, namespace, "oasisevaluations", f"selects-{suite}")
        return got if got.get("status", {}).get("phase") in {"Completed", "Failed", "Aborted"} else None

    run = wait_for(finished, timeout=120, what=f"selects-{suite} to finish")
    ready = _condition(run, "Ready")
    assert run["status"]["phase"] == "Failed"
    assert ready["reason"] == "InvalidSpec"  # the user's input, never PROVIDER_FAILURE
    assert not run["status"].get("summary")
    assert not run["status"].get("scenarios")
    return ready


def test_a_mistyped_state_key_is_invalid_and_refused_at_planning(
    custom: CustomObjectsApi, namespace: str, operator_process: subprocess.Popen[bytes]
) -> None:
    typo = {"resource": "deployment/invoice-api", "namespace": "billing", "replica": 2}
    # The first wait includes the operator's start (profile load), which takes a minute or more under load.
    obj = _scenario(custom, namespace, "typo", {2: typo}, wait=300)
    finding = next(f for f in obj["status"]["findings"] if f["rule"] == "SCN-STATE")
    assert finding["path"] == f"spec.{FIELD}"
    assert "unknown field(s) ['replica']" in finding["message"]
    assert "'replicas'" in finding["message"]

    ready = _refused_at_planning(custom, namespace, "typo")
    assert ready["message"].startswith(f"spec.scenarios.selector: Scenario typo is invalid: {FIELD}: ")
    assert "unknown field(s) ['replica']" in ready["message"]

    # A wrong type and an impossible combination (an HPA with no target, which the twin builder used to
    # refuse only while provisioning) are found the same way, each with its path.
    wrong = {"resource": "pod/invoice-api-7d9f4", "namespace": "billing", "cpu_usage": "hot"}
    targetless = {"resource": "hpa/invoice-api", "namespace": "billing", "max_replicas": 4}
    obj = _scenario(custom, namespace, "targetless", {3: wrong, 4: targetless})
    findings = {f["path"]: f["message"] for f in obj["status"]["findings"] if f["rule"] == "SCN-STATE"}
    assert sorted(findings) == [f"spec.{STATE}[3].cpu_usage", f"spec.{STATE}[4]"]
    assert "cannot read 'hot' as CPU use" in findings[f"spec.{STATE}[3].cpu_usage"]
    assert "an hpa needs target: deployment/<name>" in findings[f"spec.{STATE}[4]"]

    ready = _refused_at_planning(custom, namespace, "targetless")
    assert ready["message"].startswith("spec.scenarios.selector: Scenario targetless is invalid: ")
    assert f"is invalid: {STATE}[3].cpu_usage: pod/invoice-api-7d9f4: cannot read 'hot'" in ready["message"]

    # The workloads the sandbox's controllers expand are checked the same way: a StatefulSet's typo, a
    # CronJob's impossible schedule.
    typo = {"resource": "statefulset/ledger", "namespace": "billing", "replica": 2}
    cron = {"resource": "cronjob/nightly", "namespace": "billing", "schedule": "0 25 * * *"}
    obj = _scenario(custom, namespace, "workloads", {3: typo, 4: cron})
    findings = {f["path"]: f["message"] for f in obj["status"]["findings"] if f["rule"] == "SCN-STATE"}
    assert sorted(findings) == [f"spec.{STATE}[3].replica", f"spec.{STATE}[4].schedule"]
    assert findings[f"spec.{STATE}[3].replica"].startswith(
        "statefulset/ledger: unknown field(s) ['replica']; a statefulset takes: ["
    )
    assert "'replicas'" in findings[f"spec.{STATE}[3].replica"]
    assert findings[f"spec.{STATE}[4].schedule"].startswith(
        "cronjob/nightly: cannot read '0 25 * * *' as a cron schedule: "
        "'25' is out of range for the hour field (0-23); "
    )


def test_a_mistyped_state_assertion_is_refused_by_the_server(
    custom: CustomObjectsApi, namespace: str
) -> None:
    # A state assertion is a closed object in the CRD: strict field validation names the unknown key.
    typo = {"resource": "deployment/invoice-api", "namespace": "billing", "replica": 2}
    with pytest.raises(ApiException) as unknown:
        custom.create_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, "scenarios", _document("check-typo", {}, [typo]),
            field_validation="Strict",
        )  # fmt: skip
    assert unknown.value.status == 400  # strict field validation answers Bad Request
    assert f'unknown field \\"spec.{ASSERTION}.replica\\"' in str(unknown.value.body)

    # A wrong type is refused by the API server itself: the CRD schema types the checks.
    wrong = {"resource": "deployment/invoice-api", "namespace": "billing", "replicas": "three"}
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, "scenarios", _document("check-type", {}, [wrong])
        )
    assert refused.value.status == 422
    assert f"spec.{ASSERTION}.replicas" in str(refused.value.body)
