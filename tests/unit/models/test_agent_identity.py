"""The agent's identity declaration on the wire: every declared field kept, unknown keys kept, a wrong
field refused with its name; each answer's `model` kept the same way."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from oasis_operator.agents.protocol import AgentResponse, IdentityDocument
from oasis_operator.models.agent_identity import AgentDeclaration, AgentIdentity
from oasis_operator.models.errors import describe_validation_error

DIGEST = "sha256:" + "ab" * 32
DECLARING = {
    "identity": {
        "name": "llm-agent",
        "version": "3.1.0",
        "description": "an agent driven by a language model",
        "binary_version": "3.1.0+build.7",
        "binary_digest": DIGEST,
        "config_hash": "sha256:" + "cd" * 32,
        "system_prompt_hash": "sha512:" + "ef" * 64,
        "model": "model-a-2026-05",
        "provider": "provider-x",
        "wrapper_text": "You are an SRE. Task:\n{prompt}\nAnswer in JSON.",
        "temperature": 0.2,
        "tools": {"kubectl": "1.37"},
    },
    "configuration": {"operational_mode": "read_write"},
}


def _problems(exc: pytest.ExceptionInfo[ValidationError]) -> str:
    return describe_validation_error(exc.value, prefix="identity-and-configuration")


def test_every_declared_field_is_kept() -> None:
    identity = IdentityDocument.model_validate(DECLARING).identity
    assert identity.binary_version == "3.1.0+build.7"
    assert identity.binary_digest == DIGEST
    assert identity.config_hash == "sha256:" + "cd" * 32
    assert identity.system_prompt_hash == "sha512:" + "ef" * 64
    assert identity.model == "model-a-2026-05"
    assert identity.provider == "provider-x"
    assert identity.wrapper_text == "You are an SRE. Task:\n{prompt}\nAnswer in JSON."


def test_unknown_identity_keys_are_kept_in_additional_not_dropped() -> None:
    identity = IdentityDocument.model_validate(DECLARING).identity
    assert identity.additional == {"temperature": 0.2, "tools": {"kubectl": "1.37"}}


def test_the_declaration_survives_the_stored_identity_document() -> None:
    # identity.json is written once and read back on a resumed run: nothing may be lost or nested.
    doc = IdentityDocument.model_validate(DECLARING)
    again = IdentityDocument.model_validate_json(doc.model_dump_json())
    assert again == doc
    assert again.identity.additional == {"temperature": 0.2, "tools": {"kubectl": "1.37"}}


def test_an_explicit_additional_object_is_merged_with_the_unknown_keys() -> None:
    identity = AgentIdentity.model_validate({"name": "a", "additional": {"seed": 7}, "top_p": 0.9})
    assert identity.additional == {"seed": 7, "top_p": 0.9}


def test_an_agent_declaring_nothing_serialises_as_before_the_declaration() -> None:
    identity = AgentIdentity.model_validate({"name": "plain", "version": "1"})
    assert json.loads(identity.model_dump_json()) == {"name": "plain", "version": "1", "description": None}
    assert identity.declaration() == AgentDeclaration()


def test_declaration_holds_only_the_declared_fields() -> None:
    declaration = IdentityDocument.model_validate(DECLARING).identity.declaration()
    assert set(AgentDeclaration.model_fields) == {
        "binary_version",
        "binary_digest",
        "config_hash",
        "system_prompt_hash",
        "model",
        "provider",
        "wrapper_text",
        "additional",
    }
    assert declaration.model == "model-a-2026-05"
    assert declaration.additional == {"temperature": 0.2, "tools": {"kubectl": "1.37"}}


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("model", 42, "identity-and-configuration.identity.model: Input should be a valid string"),
        ("provider", ["x"], "identity-and-configuration.identity.provider: Input should be a valid string"),
        ("binary_version", {"v": 1}, "identity-and-configuration.identity.binary_version: Input should be"),
        ("wrapper_text", 1.5, "identity-and-configuration.identity.wrapper_text: Input should be a valid"),
        ("model", "", "identity-and-configuration.identity.model: String should have at least 1 character"),
    ],
)
def test_a_declared_field_of_the_wrong_type_is_refused_naming_it(
    field: str, value: object, said: str
) -> None:
    document = {"identity": {"name": "a", field: value}}
    with pytest.raises(ValidationError) as exc:
        IdentityDocument.model_validate(document)
    assert said in _problems(exc)


@pytest.mark.parametrize("field", ["binary_digest", "config_hash", "system_prompt_hash"])
def test_a_hash_that_is_not_algorithm_colon_hex_is_refused_naming_the_field(field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        IdentityDocument.model_validate({"identity": {"name": "a", field: "ab" * 32}})
    problems = _problems(exc)
    assert f"identity-and-configuration.identity.{field}: " in problems
    assert "write '<algorithm>:<hex>'" in problems


def test_a_model_name_over_the_bound_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as exc:
        IdentityDocument.model_validate({"identity": {"name": "a", "model": "m" * 257}})
    assert (
        "identity-and-configuration.identity.model: String should have at most 256 characters"
        in _problems(exc)
    )


def test_additional_that_is_not_an_object_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError) as exc:
        IdentityDocument.model_validate({"identity": {"name": "a", "additional": [1], "other": 2}})
    problems = _problems(exc)
    assert "identity-and-configuration.identity.additional: Input should be a valid dictionary" in problems
    assert "unknown field" not in problems  # the other key is not what is wrong


def test_undeclared_keys_over_their_bound_are_refused_with_the_bound() -> None:
    with pytest.raises(ValidationError) as exc:
        AgentIdentity.model_validate({"name": "a", "notes": "n" * 20000})
    problems = describe_validation_error(exc.value, prefix="identity")
    assert "identity.additional: the identity's undeclared keys (notes…)" in problems
    assert "over the 16384-byte bound" in problems


def test_an_answer_keeps_the_model_it_names() -> None:
    assert AgentResponse.model_validate({"final_answer": "done", "model": "model-b"}).model == "model-b"
    assert AgentResponse.model_validate({"final_answer": "done"}).model is None


def test_an_answer_whose_model_is_not_a_string_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as exc:
        AgentResponse.model_validate({"final_answer": "done", "model": {"name": "m"}})
    assert "response.model: Input should be a valid string" in describe_validation_error(
        exc.value, prefix="response"
    )


def test_undeclared_keys_holding_nan_are_refused_naming_additional() -> None:
    document = json.loads('{"identity": {"name": "a", "score": NaN}}')  # Python's JSON reader takes NaN
    with pytest.raises(ValidationError) as exc:
        IdentityDocument.model_validate(document)
    assert "identity-and-configuration.identity.additional: holds a number JSON cannot carry" in _problems(
        exc
    )
