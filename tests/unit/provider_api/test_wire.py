"""The provider API's pure parts: request parsing, state forms, observations, the credential it accepts."""

from __future__ import annotations

import base64

import pytest

from oasis_operator.models.evidence import Actor
from oasis_operator.provider_api.observations import audit_log, resource_state, state_diff
from oasis_operator.provider_api.server import presented_token
from oasis_operator.provider_api.wire import (
    ObserveBody,
    ProvisionBody,
    WireError,
    oasis_state_entry,
    parse_body,
)
from oasis_operator.sandbox.snapshot import ResourceSnapshot
from tests.unit.engine.engine_builders import entry


def _error(model: type, raw: bytes) -> WireError:
    with pytest.raises(WireError) as caught:
        parse_body(model, raw)
    return caught.value


def test_bad_bodies_name_the_field_at_fault() -> None:
    assert _error(ProvisionBody, b"[1]").problem == "the body must be a JSON object, not list"
    assert "not JSON" in _error(ProvisionBody, b"{").problem
    missing = _error(ProvisionBody, b'{"scenario_id": "x"}')
    assert (missing.status, missing.field) == (400, "environment")
    nested = _error(ProvisionBody, b'{"scenario_id": "x", "environment": {"type": "k", "state": [3]}}')
    assert nested.field == "environment.state[0]"
    tier = _error(ProvisionBody, b'{"scenario_id": "x", "environment": {"type": "k"}, "tier": 9}')
    assert tier.field == "tier"
    kind = _error(ObserveBody, b'{"environment_id": "e", "observation_type": "metrics"}')
    assert kind.field == "observation_type"
    assert kind.problem == "must be one of audit_log, resource_state, state_diff"
    assert kind.document() == {"status": "error", "error": str(kind), "field": "observation_type"}


def test_the_runner_state_form_becomes_the_scenario_entry_again() -> None:
    runner = {"kind": "deployment", "name": "api", "namespace": "payments", "spec": {"replicas": 2}}
    assert oasis_state_entry(runner, "s") == {
        "resource": "deployment/api",
        "namespace": "payments",
        "replicas": 2,
    }
    ours = {"resource": "namespace/frontend", "zone": "zone-a"}
    assert oasis_state_entry(ours, "s") == ours
    with pytest.raises(WireError) as caught:
        oasis_state_entry({"kind": "deployment"}, "state[2]")
    assert caught.value.field == "state[2]"


def test_audit_entries_are_annotated_with_the_agent_principal_and_filtered() -> None:
    entries = [
        entry(1, "get", "pods", namespace="frontend"),
        entry(2, "delete", "pods", "web-1", namespace="payments", response_code=403),
        entry(3, "list", "pods", actor=Actor.FOREIGN, credential="sha256:abcd", user=""),
    ]
    data = audit_log(entries, "oasis-agent", {})
    assert data["agent_principal"] == "oasis-agent"
    assert [e["user"] for e in data["entries"]] == ["oasis-agent", "oasis-agent", "foreign:sha256:abcd"]
    assert data["entries"][1] == {
        "timestamp": "2026-01-01T00:01:02Z", "verb": "delete", "resource": "pods", "namespace": "payments",
        "user": "oasis-agent", "request_body": "", "response_code": 403, "name": "web-1",
    }  # fmt: skip
    assert len(audit_log(entries, "a", {"namespace": "payments"})["entries"]) == 1
    assert len(audit_log(entries, "a", {"verb": "GET"})["entries"]) == 1
    assert len(audit_log(entries, "a", {"resource_type": "pod"})["entries"]) == 3
    window = {"time_from": "2026-01-01T00:01:02Z", "time_to": "2026-01-01T00:01:02Z"}
    assert [e["verb"] for e in audit_log(entries, "a", window)["entries"]] == ["delete"]
    with pytest.raises(WireError) as caught:
        audit_log(entries, "a", {"time_from": "yesterday"})
    assert caught.value.field == "parameters.time_from"


def _deployment(replicas: int) -> ResourceSnapshot:
    body = {"metadata": {"name": "api", "namespace": "payments"}, "spec": {"replicas": replicas}}
    return ResourceSnapshot(kind="Deployment", namespace="payments", name="api", exists=True, object=body)


def test_resource_state_and_state_diff_answer_from_the_snapshots() -> None:
    before, after = [_deployment(2)], [_deployment(0)]
    one = resource_state(after, {"kind": "deployment", "name": "api", "namespace": "payments"})
    assert (one["kind"], one["spec"]["replicas"], one["exists"]) == ("Deployment", 0, True)
    assert [r["name"] for r in resource_state(after, {})["resources"]] == ["api"]
    with pytest.raises(WireError) as caught:
        resource_state(after, {"kind": "deployment", "name": "ghost"})
    assert caught.value.status == 404
    with pytest.raises(WireError) as caught:
        resource_state(after, {"kind": "deployment"})
    assert caught.value.field == "parameters.name"
    changed = state_diff(before, after, {})
    assert changed["changes"] == [{"path": "Deployment/payments/api:spec.replicas", "before": 2, "after": 0}]
    assert state_diff(before, before, {})["changes"] == []


def test_the_api_accepts_its_token_as_bearer_or_as_the_basic_password() -> None:
    assert presented_token("Bearer s3cret") == "s3cret"
    assert presented_token("Basic " + base64.b64encode(b"runner:s3cret").decode()) == "s3cret"
    assert presented_token("Basic " + base64.b64encode(b"runner:").decode()) is None
    assert presented_token("Basic !!!") is None
    assert presented_token("") is None
