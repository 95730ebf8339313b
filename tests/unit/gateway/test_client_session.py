"""The record keeps the client's invocation id (kubectl's `Kubectl-Session` header) when it sends one."""

from __future__ import annotations

from oasis_operator.gateway.attribution import Attribution
from oasis_operator.gateway.entries import RequestFacts, request_entry
from oasis_operator.gateway.requestinfo import parse_request
from oasis_operator.models.evidence import Actor, AuditEntry


def _facts(session: str | None) -> RequestFacts:
    path = "/api/v1/namespaces/default/pods"
    return RequestFacts(
        method="GET",
        path=path,
        raw_query="",
        content_type=None,
        body=b"",
        api="kubernetes",
        api_path=path,
        info=parse_request("GET", path),
        client_session=session,
    )


def test_a_kubectl_session_is_recorded_on_each_request() -> None:
    who = Attribution(env_id="env-1", actor=Actor.AGENT, serve=True)
    entry = request_entry(_facts("7d1c3b0e-5f0a-4c57-9a57-2b0f1d1f0a11"), who, None, "agent")
    assert entry.client_session == "7d1c3b0e-5f0a-4c57-9a57-2b0f1d1f0a11"
    assert entry.model_dump()["client_session"] == entry.client_session


def test_a_request_without_one_reads_as_before() -> None:
    who = Attribution(env_id="env-1", actor=Actor.AGENT, serve=True)
    entry = request_entry(_facts(None), who, None, "agent")
    assert entry.client_session is None
    assert "client_session" not in entry.model_dump()
    assert AuditEntry.model_validate(entry.model_dump()) == entry
