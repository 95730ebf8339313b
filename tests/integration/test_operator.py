"""`oasis operator` against the real API server: conditions on valid and invalid resources."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import REPO, VENV_BIN, Cluster, get_custom, wait_for

DATA = Path(__file__).resolve().parents[1] / "data"


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DATA / name).read_text())
    return doc


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), None)


def _create(custom: CustomObjectsApi, namespace: str, plural: str, body: dict[str, Any]) -> None:
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, plural, body)


def _wait_condition(
    custom: CustomObjectsApi, namespace: str, plural: str, name: str, type_: str
) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, plural, name)
        cond = _condition(obj, type_)
        return obj if cond and cond.get("observedGeneration") == obj["metadata"]["generation"] else None

    result: dict[str, Any] = wait_for(ready, timeout=60, what=f"{type_} on {plural}/{name}")
    return result


def test_scenarios_get_valid_conditions(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator_process: subprocess.Popen[bytes]
) -> None:
    good = _load("scenario-valid.yaml")
    _create(custom, namespace, "scenarios", good)
    bad = _load("scenario-valid.yaml")
    bad["metadata"]["name"] = "bad-applicability"
    bad["spec"]["applicability"] = {"operational_mode": {"nested": "object"}}
    _create(custom, namespace, "scenarios", bad)

    obj = _wait_condition(custom, namespace, "scenarios", "cross-namespace-restart", "Valid")
    cond = _condition(obj, "Valid")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("True", "Validated")
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    assert obj["status"]["scenarioId"] == "infra.safety.be.zone-violation-901"

    obj = _wait_condition(custom, namespace, "scenarios", "bad-applicability", "Valid")
    cond = _condition(obj, "Valid")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "ValidationFailed")
    assert cond["message"].startswith("spec.applicability.operational_mode")
    assert obj["status"]["findings"][0]["path"].startswith("spec.applicability.operational_mode")

    # Fixing the spec flips the condition for the new generation.
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "scenarios", "bad-applicability",
        {"spec": {"applicability": {"operational_mode": "read_write"}}},
    )  # fmt: skip
    obj = _wait_condition(custom, namespace, "scenarios", "bad-applicability", "Valid")
    assert obj["metadata"]["generation"] == 2
    assert (_condition(obj, "Valid") or {}).get("status") == "True"
    # kopf keeps its progress in status.kopf, never in annotations (those are the user's).
    annotations = obj["metadata"].get("annotations", {})
    assert not any(k.startswith(("kopf.zalando.org", API_GROUP)) for k in annotations)

    table = cluster.kubectl("get", "scenarios", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "SCENARIO-ID", "CLASS", "CATEGORY", "TIER", "VALID", "AGE"]
    row = next(line.split() for line in table if line.startswith("cross-namespace-restart"))
    assert row[1:6] == ["infra.safety.be.zone-violation-901", "safety", "boundary-enforcement", "1", "True"]


def test_evaluations_are_accepted_or_refused(
    cluster: Cluster,
    api: Any,
    custom: CustomObjectsApi,
    namespace: str,
    operator_process: subprocess.Popen[bytes],
) -> None:
    _create(custom, namespace, "oasisevaluations", _load("evaluation-valid.yaml"))
    two = _load("evaluation-valid.yaml")
    two["metadata"]["name"] = "two-agents"
    two["spec"]["agent"]["command"] = {"command": ["/usr/local/bin/my-agent"]}
    with pytest.raises(ApiException) as refused:  # the server's CEL rule, before the operator sees it
        _create(custom, namespace, "oasisevaluations", two)
    assert "set exactly one of agent.http, agent.command, agent.job" in str(refused.value.body)
    # What only the operator can judge (the profile it serves) is refused by it, on the object.
    bad = _load("evaluation-valid.yaml")
    bad["metadata"]["name"] = "two-agents"
    bad["spec"]["profile"]["name"] = "no-such-profile"
    _create(custom, namespace, "oasisevaluations", bad)

    # Nothing listens on the agent's URL: the run stops before any scenario, without a verdict.
    def finished() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, "oasisevaluations", "careful-agent")
        return obj if obj.get("status", {}).get("phase") in {"Completed", "Failed", "Aborted"} else None

    obj = wait_for(finished, timeout=120, what="careful-agent to finish")
    assert obj["status"]["phase"] == "Failed"
    assert obj["status"].get("runGeneration") is None
    assert (_condition(obj, "Ready") or {}).get("reason") == "AgentUnreachable"
    assert not obj["status"].get("scenarios")
    assert not obj["status"].get("summary")

    obj = _wait_condition(custom, namespace, "oasisevaluations", "two-agents", "Ready")
    assert obj["status"]["phase"] == "Failed"
    ready = _condition(obj, "Ready") or {}
    assert ready["reason"] == "InvalidSpec"
    assert ready["message"].startswith("spec.profile.name: 'no-such-profile' is not served here")
    stalled = _condition(obj, "Stalled") or {}
    assert (stalled["status"], stalled["reason"], stalled["message"]) == (
        "True",
        "InvalidSpec",
        ready["message"],
    )
    assert stalled["observedGeneration"] == obj["metadata"]["generation"]
    assert (_condition(obj, "Reconciling") or {})["status"] == "False"

    # The refusal is also an Event on the object, so `kubectl describe` shows it.
    def warning_event() -> bool:
        events = CoreV1Api(api).list_namespaced_event(namespace).items
        return any(e.involved_object.name == "two-agents" and e.type == "Warning" for e in events)

    wait_for(warning_event, timeout=30, what="a Warning event on two-agents")
    # Refused before it started, so fixing the spec gets it judged again (up to the unreachable agent).
    custom.patch_namespaced_custom_object(
        API_GROUP,
        API_VERSION,
        namespace,
        "oasisevaluations",
        "two-agents",
        {"spec": {"profile": {"name": "software-infrastructure"}}},
    )

    def judged_again() -> dict[str, Any] | None:
        o = get_custom(custom, namespace, "oasisevaluations", "two-agents")
        ready = _condition(o, "Ready") or {}
        return (
            o
            if o["status"].get("observedGeneration") == 2 and ready.get("reason") == "AgentUnreachable"
            else None
        )

    wait_for(judged_again, timeout=60, what="two-agents judged again after the fix")
    table = cluster.kubectl("get", "oasisevaluations", "-n", namespace).stdout.splitlines()
    header = ["NAME", "AGENT", "PHASE", "SAFETY", "TIER", "DONE", "TOTAL", "INCOMPLETE", "AGE"]
    assert table[0].split() == header
    row = next(line.split() for line in table if line.startswith("careful-agent"))
    assert row[1] == "Failed"  # no agent name (it never answered) and no safety verdict


def test_profile_findings_reach_status(
    custom: CustomObjectsApi, namespace: str, operator_process: subprocess.Popen[bytes]
) -> None:
    doc = _load("scenario-valid.yaml")
    doc["metadata"]["name"] = "undefined-behaviour"
    doc["spec"]["assertions"]["must"] = [{"behavior": "make_everything_fine"}]
    _create(custom, namespace, "scenarios", doc)
    obj = _wait_condition(custom, namespace, "scenarios", "undefined-behaviour", "Valid")
    cond = _condition(obj, "Valid") or {}
    assert (cond["status"], cond["reason"]) == ("False", "ValidationFailed")
    errors = [f for f in obj["status"]["findings"] if f["severity"] == "error"]
    assert errors, obj["status"]
    assert errors[0]["path"] == "spec.assertions.must[0].behavior"
    assert cond["message"].startswith("spec.assertions.must[0].behavior: ")


def test_exported_profile_applies_and_every_scenario_is_valid(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator_process: subprocess.Popen[bytes],
    tmp_path: Path,
) -> None:  # fmt: skip
    export = subprocess.run(
        [str(VENV_BIN / "oasis"), "scenarios", "export", str(REPO / "profiles" / "software-infrastructure")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    manifests = tmp_path / "scenarios.yaml"
    manifests.write_text(export.stdout)
    cluster.kubectl("apply", "-n", namespace, "-f", str(manifests))

    def all_judged() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = custom.list_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, "scenarios"
        )["items"]
        judged = [i for i in items if _condition(i, "Valid")]
        return items if len(items) == 50 and len(judged) == 50 else None

    items = wait_for(all_judged, timeout=120, interval=1, what="all 50 exported scenarios to be judged")
    invalid = {i["metadata"]["name"]: (_condition(i, "Valid") or {}).get("message") for i in items
               if (_condition(i, "Valid") or {}).get("status") != "True"}  # fmt: skip
    assert invalid == {}
    classes = sorted(i["metadata"]["labels"]["oasis.evaluation.dev/classification"] for i in items)
    assert classes.count("safety") == 21
    assert classes.count("capability") == 29
