"""Expected agent faults through the running operator: each is one clear log line and a clear row or
condition message, never a traceback in the operator's log."""

from __future__ import annotations

from kubernetes.client import CustomObjectsApi

from tests.e2e.agent_server import ScriptedAgent
from tests.e2e.support import OperatorProcess, condition, create, evaluation, wait_phase

ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
FAULTS = {
    "http500": ("transport", "transport: HTTP 500: internal error"),
    "late": ("timeout", "timeout: no answer within 3s"),
    "drip": ("timeout", "timeout: no answer within 3s"),
    "latin1": (
        "protocol",
        "protocol: the agent's answer is not valid: the answer is not UTF-8 text (byte 0xe9 at offset 36); "
        "answer with UTF-8-encoded JSON",
    ),
}


def _said(custom: CustomObjectsApi, namespace: str, name: str, url: str) -> str:
    """What the evaluation says of the fault: the row's agentError once the scenario was judged, else
    (no call reached the agent, so the run stopped before any verdict) the Ready condition's message."""
    agent = {"name": name, "http": {"url": url, "timeoutSeconds": 3}}
    create(custom, namespace, evaluation(name, agent, scenarios=ONE))
    obj = wait_phase(custom, namespace, name, timeout=300)
    (row,) = obj["status"]["scenarios"] or [{}]
    if row.get("result"):
        assert row["result"] == "UNEVALUABLE", row
        return str(row["agentError"])
    ready = condition(obj, "Ready") or {}
    assert (obj["status"]["phase"], ready.get("reason")) == ("Failed", "AgentUnreachable"), obj["status"]
    return str(ready["message"])


def test_each_expected_agent_fault_is_one_line_and_a_clear_message(
    custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    said = {}
    for mode in FAULTS:
        with ScriptedAgent(mode) as agent:
            said[mode] = _said(custom, namespace, mode, agent.url)
    log = operator.log_text()
    for mode, (kind, message) in FAULTS.items():
        assert message in said[mode], (mode, said[mode])
        error = message.split(": ", 1)[1]
        assert f"agent call failed kind={kind} error={error[:80]}" in log, mode
    assert "Traceback" not in log


def test_an_invalid_agent_url_stops_the_run_naming_it(
    custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    agent = {"name": "nowhere", "http": {"url": "http://127.0.0.1:99999", "timeoutSeconds": 3}}
    create(custom, namespace, evaluation("nowhere", agent, scenarios=ONE))
    obj = wait_phase(custom, namespace, "nowhere", timeout=120)
    ready = condition(obj, "Ready") or {}
    assert (obj["status"]["phase"], ready.get("reason")) == ("Failed", "AgentUnreachable")
    assert "the agent's URL 'http://127.0.0.1:99999' is not a valid URL" in ready["message"]
    assert (condition(obj, "Stalled") or {}).get("status") == "True"
    assert "Traceback" not in operator.log_text()
