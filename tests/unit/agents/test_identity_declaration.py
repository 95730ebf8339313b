"""The identity declaration and each answer's model through the adapters, and from the reference agents."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from oasis_operator import __version__
from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.protocol import AgentRequest, IdentityDocument
from oasis_operator.agents.reference.command import MODEL, act, identity
from oasis_operator.models.crd import AgentStatus
from oasis_operator.models.errors import describe_validation_error
from tests.unit.agents.test_adapters import REQUEST, script

DIGEST = "sha256:" + "0f" * 32


def _agent(tmp_path: Path, identity_doc: object, answer: object) -> list[str]:
    return script(
        tmp_path,
        f"""
        import json, os
        if os.environ.get("OASIS_MODE") == "identity":
            print(json.dumps({identity_doc!r}))
        else:
            print(json.dumps({answer!r}))
        """,
    )


def test_a_declaring_command_agent_keeps_every_field_and_the_answers_model(tmp_path: Path) -> None:
    declared = {
        "identity": {"name": "llm", "version": "2", "binary_digest": DIGEST, "model": "m-1", "provider": "p",
                     "wrapper_text": "Do: {task}", "region": "eu"},
        "configuration": {},
    }  # fmt: skip
    adapter = CommandAdapter(_agent(tmp_path, declared, {"final_answer": "ok", "model": "m-1"}))
    doc = asyncio.run(adapter.identity())
    assert (doc.identity.binary_digest, doc.identity.model, doc.identity.provider) == (DIGEST, "m-1", "p")
    assert doc.identity.wrapper_text == "Do: {task}"
    assert doc.identity.additional == {"region": "eu"}
    outcome = asyncio.run(adapter.run(REQUEST, 10))
    assert outcome.response is not None
    assert outcome.response.model == "m-1"


def test_a_command_agent_declaring_nothing_keeps_its_name_and_no_declaration(tmp_path: Path) -> None:
    plain = {"identity": {"name": "plain", "version": "1"}, "configuration": {}}
    adapter = CommandAdapter(_agent(tmp_path, plain, {"final_answer": "ok"}))
    doc = asyncio.run(adapter.identity())
    assert doc.identity.declaration().model_dump(exclude_defaults=True) == {}
    outcome = asyncio.run(adapter.run(REQUEST, 10))
    assert outcome.response is not None
    assert outcome.response.model is None


def test_a_command_agents_identity_with_a_wrong_field_is_an_error_naming_it(tmp_path: Path) -> None:
    wrong = {"identity": {"name": "llm", "model": 7}, "configuration": {}}
    with pytest.raises(ValidationError) as exc:
        asyncio.run(CommandAdapter(_agent(tmp_path, wrong, {})).identity())
    problems = describe_validation_error(exc.value, prefix="identity-and-configuration")
    assert "identity-and-configuration.identity.model: Input should be a valid string" in problems


def test_an_answer_with_a_wrong_model_is_a_protocol_error_naming_the_field(tmp_path: Path) -> None:
    plain = {"identity": {"name": "plain"}, "configuration": {}}
    outcome = asyncio.run(CommandAdapter(_agent(tmp_path, plain, {"model": ["a", "b"]})).run(REQUEST, 10))
    assert outcome.response is None
    assert outcome.error_kind == "protocol"
    assert "response.model: Input should be a valid string" in (outcome.error or "")


def test_the_reference_agents_declare_no_model_and_name_it_in_every_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    doc = identity("careful")
    assert (doc.identity.model, doc.identity.provider, doc.identity.binary_version) == (
        MODEL,
        "none",
        __version__,
    )
    wire = json.loads(doc.model_dump_json())
    assert IdentityDocument.model_validate(wire) == doc
    answer = act("careful", AgentRequest(prompt="look around"))  # no credentials: it does nothing
    assert answer.model == MODEL


def test_the_status_shows_the_declared_identity_with_the_wrapper_text_cut() -> None:
    doc = IdentityDocument.model_validate(
        {"identity": {"name": "llm", "config_hash": DIGEST, "model": "m-1", "wrapper_text": "w" * 500}}
    )
    status = AgentStatus.of(doc.identity, {"zone_model": True})
    assert (status.configHash, status.model, status.configuration) == (DIGEST, "m-1", {"zone_model": "true"})
    assert status.wrapperText is not None
    assert len(status.wrapperText) == 200
    assert status.wrapperText.endswith("…")
    assert (
        AgentStatus.of(IdentityDocument.model_validate({"identity": {"name": "x"}}).identity, {}).model
        is None
    )
