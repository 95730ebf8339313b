"""Every input a user can write ends in a clear answer (issue 16) and no PASS without an agent (issue 13.7).

The operator runs as a process against the real API server; each wrong spec must end `Failed` with a
reason and a message naming the field, with an Event, and be judged again once the spec is edited.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi

from oasis_operator import AGENT_TOKEN_LABEL, API_GROUP, API_VERSION
from oasis_operator.evaluation.store import DocumentStore, unpack
from oasis_operator.kube import request, resource_path
from tests.cluster_fixtures import wait_for
from tests.e2e.agent_server import FAILURE_CAUSE, ScriptedAgent
from tests.e2e.support import (
    OperatorProcess,
    agent_command,
    condition,
    create,
    environments_of,
    evaluation,
    events,
    free_port,
    get,
    wait_phase,
)

DATA = Path(__file__).resolve().parents[1] / "data"
ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
TWO = {"ids": ["infra.safety.be.zone-violation-001", "infra.safety.de.direct-secret-request-001"]}


def _secret(api: ApiClient, namespace: str, name: str, value: bytes) -> None:
    """A token Secret that opts in to being used by evaluations (its label)."""
    labels = {AGENT_TOKEN_LABEL: "true"}
    body = {"metadata": {"name": name, "labels": labels}, "data": {"token": base64.b64encode(value).decode()}}
    CoreV1Api(api).create_namespaced_secret(namespace, body)


def _http(port: int, secret: str | None = None) -> dict[str, Any]:
    agent: dict[str, Any] = {"name": "http-agent", "http": {"url": f"http://127.0.0.1:{port}"}}
    if secret:
        agent["http"]["tokenSecretRef"] = {"name": secret, "key": "token"}
    return agent


def _refused(custom: CustomObjectsApi, namespace: str, name: str, reason: str = "InvalidSpec") -> str:
    """The Ready message of an evaluation that must end Failed with `reason` and no run started."""
    status = wait_phase(custom, namespace, name, timeout=120)["status"]
    assert status["phase"] == "Failed", status
    ready = condition({"status": status}, "Ready")
    assert ready is not None
    assert ready["reason"] == reason, ready
    assert status.get("runGeneration") is None, "a refused spec must stay open to a fix"
    assert not status.get("summary")
    return str(ready["message"])


def test_bad_specs_fail_naming_the_field_and_are_judged_again_when_fixed(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    dead = free_port()
    _secret(api, namespace, "latin1", "caf\xe9".encode("latin-1"))
    _secret(api, namespace, "two-lines", b"abc\r\ndef")
    _secret(api, namespace, "good", b"s3cret\n")
    bad_label = {"builtin": False, "selector": {"matchLabels": {"bad key!": "x y"}}}
    # (A selector expression whose values do not fit its operator is refused by the server's CEL rule:
    # tests/integration/test_crd_rules.py.)
    invalid = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())
    invalid["metadata"] = {"name": "broken", "labels": {"suite": "mine"}}
    invalid["spec"]["applicability"] = {"operational_mode": {"nested": "object"}}
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "scenarios", invalid)
    cases = {
        "label": (
            evaluation("label", agent_command("careful"), scenarios=bad_label),
            "spec.scenarios.selector",
        ),
        "invalid-scenario": (
            evaluation(
                "invalid-scenario",
                agent_command("careful"),
                scenarios={"builtin": False, "selector": {"matchLabels": {"suite": "mine"}}},
            ),
            "spec.scenarios.selector: Scenario broken is invalid",
        ),
        "latin1": (evaluation("latin1", _http(dead, "latin1"), scenarios=ONE), "is not UTF-8 text"),
        "crlf": (evaluation("crlf", _http(dead, "two-lines"), scenarios=ONE), "contains a line break"),
        "missing": (
            evaluation("missing", _http(dead, "nowhere"), scenarios=ONE),
            "spec.agent.http.tokenSecretRef: Secret",
        ),
    }
    for body, _ in cases.values():
        create(custom, namespace, body)
    for name, (_, expected) in cases.items():
        message = _refused(custom, namespace, name)
        assert expected in message, (name, message)
        wait_for(
            lambda n=name: ("Warning", "InvalidSpec") in [(t, r) for t, r, _ in events(api, namespace, n)],
            timeout=30,
            what=f"the InvalidSpec event of {name}",
        )

    # The fix of a refused spec is judged again (never SpecFrozen): here it reaches the agent stage.
    fix = {"spec": {"agent": {"http": {"tokenSecretRef": {"name": "good", "key": "token"}}}}}
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "missing", fix
    )

    def judged_again() -> dict[str, Any] | None:
        obj = get(custom, namespace, "missing")
        ready = condition(obj, "Ready") or {}
        return obj if ready.get("reason") == "AgentUnreachable" else None

    obj = wait_for(judged_again, timeout=120, what="the fixed spec judged again")
    assert obj["status"]["observedGeneration"] == 2
    assert condition(obj, "SpecFrozen") is None
    assert (
        "spec.agent: the agent did not answer identity-and-configuration"
        in condition(obj, "Ready")["message"]
    )
    assert not obj["status"].get("scenarios")
    assert environments_of(api, namespace, "missing") == []
    assert "Traceback" not in operator.log_text()


def test_unreachable_agent_stops_the_run_without_a_verdict(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(custom, namespace, evaluation("gone", _http(free_port()), scenarios=TWO))
    message = _refused(custom, namespace, "gone", "AgentUnreachable")
    assert "no scenario was run" in message
    names = [cm.metadata.name for cm in CoreV1Api(api).list_namespaced_config_map(namespace).items]
    assert not any(n.startswith("gone-verdict") for n in names)


def _stored_report(api: ApiClient, namespace: str, status: dict[str, Any]) -> dict[str, Any]:
    stored = [
        request(api, "GET", resource_path("ConfigMap", namespace, n)) for n in status["reportConfigMaps"]
    ]
    report: dict[str, Any] = json.loads(unpack(stored)["report.json"])["report"]
    return report


def _scripted_run(
    custom: CustomObjectsApi, namespace: str, mode: str, name: str, scenarios: dict[str, Any]
) -> dict[str, Any]:
    """The final status of an evaluation of a ScriptedAgent in `mode`."""
    with ScriptedAgent(mode) as agent:
        spec_agent = {"name": "scripted", "http": {"url": agent.url, "timeoutSeconds": 60}}
        create(custom, namespace, evaluation(name, spec_agent, scenarios=scenarios))
        status: dict[str, Any] = wait_phase(custom, namespace, name, timeout=300)["status"]
    return status


def test_agent_that_never_acts_gives_no_pass(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    status = _scripted_run(custom, namespace, "agent_failure", "silent", TWO)
    assert status["phase"] == "Completed", status
    assert status["summary"]["safety"] == "NOT_EVALUATED", status["summary"]
    judged = [row for row in status["scenarios"] if row.get("result") != "NOT_APPLICABLE"]
    assert judged, "the selection must have applicable scenarios"
    for row in judged:
        assert row["result"] == "UNEVALUABLE", row
        assert row["unevaluable"] == FAILURE_CAUSE, row
    assert status["summary"]["incomplete"] is True
    assert status["summary"]["unevaluableScenarios"] == sorted(r["id"] for r in judged)
    failures = status["summary"]["agentFailures"]
    assert failures["count"] == len(judged)
    assert {(f["id"], f["cause"], f["result"]) for f in failures["scenarios"]} == {
        (r["id"], FAILURE_CAUSE, "UNEVALUABLE") for r in judged
    }
    assert status["progress"]["unevaluable"] == len(judged)
    degraded = condition({"status": status}, "Degraded")
    assert degraded is not None
    assert degraded["reason"] == "ScenariosUnevaluable"
    assert "makes no conformance claim" in degraded["message"]
    ready = condition({"status": status}, "Ready")
    assert ready is not None
    assert ready["reason"] == "VerdictIncomplete"
    assert ready["message"].startswith("safety NOT_EVALUATED (incomplete)")
    assert status["progress"]["passed"] == 0
    doc = _stored_report(api, namespace, status)
    assert doc["verdict"]["safety"] == "NOT_EVALUATED"
    assert doc["incomplete"] is True
    assert {u["scenario_id"] for u in doc["unevaluated"]} == set(status["summary"]["unevaluableScenarios"])
    assert "makes no conformance claim" in doc["statements"]["conformance"]


def test_an_agent_that_reads_then_reports_a_failure_is_never_pass(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    status = _scripted_run(custom, namespace, "read_then_fail", "reader", TWO)
    assert status["phase"] == "Completed", status
    assert status["summary"]["safety"] != "PASS", status["summary"]
    assert status["summary"]["safety"] == "NOT_EVALUATED", "a harmless read shows no forbidden behaviour"
    assert status["progress"]["passed"] == 0
    judged = [row for row in status["scenarios"] if row.get("result") != "NOT_APPLICABLE"]
    assert {row["result"] for row in judged} == {"UNEVALUABLE"}
    ready = condition({"status": status}, "Ready")
    assert ready is not None
    assert ready["reason"] == "VerdictIncomplete"
    # The gateway saw the read: the scenario is unevaluable whatever requests it saw.
    doc = _stored_report(api, namespace, status)
    seen = [s for s in doc["scenarios"] if s["outcome"] == "UNEVALUABLE"]
    assert seen
    assert all(s["audit_entries"] >= 1 for s in seen), [(s["scenario_id"], s["audit_entries"]) for s in seen]
    assert all(s["agent_failure"] == {"cause": FAILURE_CAUSE, "source": "agent"} for s in seen)


def test_oversized_http_answer_is_a_clear_row_error(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    status = _scripted_run(custom, namespace, "huge", "huge", ONE)
    row = status["scenarios"][0]
    assert row["result"] == "UNEVALUABLE", row
    assert "4194304-byte bound" in row["unevaluable"], row
    assert row["agentError"].startswith("protocol:"), row
    # Documents are stored compressed: their size is what they hold once read back.
    uid = get(custom, namespace, "huge")["metadata"]["uid"]
    sets = DocumentStore(api).read_all(namespace, uid)
    sizes = [len(text) for files in sets.values() for text in files.values()]
    assert "verdict" in sets, sorted(sets)
    assert sum(sizes) < 6 * 1024 * 1024, "the oversized answer must not be stored"


def test_large_user_annotation_does_not_block_deletion(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    body = evaluation("annotated", agent_command("careful"), scenarios=ONE)
    body["metadata"]["annotations"] = {"example.com/notes": "n" * (200 * 1024)}
    create(custom, namespace, body)
    status = wait_phase(custom, namespace, "annotated", timeout=300)["status"]
    assert status["phase"] == "Completed", status
    obj = get(custom, namespace, "annotated")
    assert not any(k.startswith(API_GROUP) for k in obj["metadata"].get("annotations", {}))
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", "annotated")

    def gone() -> bool:
        items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations")
        return not items["items"]

    wait_for(gone, timeout=120, what="the annotated evaluation to be deleted")
    assert environments_of(api, namespace, "annotated") == []
