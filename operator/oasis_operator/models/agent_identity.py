"""Who an agent says it is: a model of its own, so the agent side reads it without the evidence models.

Besides its name, version and description, an agent may declare what it is built from and what drives
it (the identity declaration of the standard's later revisions): the version and digest of its binary,
digests of its configuration and of its system prompt, the model and the model provider it uses, and
the text it wraps around each task (constant, so it is disclosed once). Keys this project does not know
are kept in `additional`, never dropped, so whatever an agent declares reaches the verdict and report.

Each declared field is optional; a declared field of the wrong type or shape is refused with the
field's name (the caller reports it as a protocol error of the agent).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

# `<algorithm>:<encoded>` as OCI image digests are written, e.g. `sha256:` and 64 hex digits.
DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")
DIGEST_FIELDS = ("binary_digest", "config_hash", "system_prompt_hash")
TEXT_LIMIT = 256
WRAPPER_LIMIT = 16 * 1024
ADDITIONAL_LIMIT = 16 * 1024


def _text(description: str) -> Any:
    return Field(default=None, min_length=1, max_length=TEXT_LIMIT, description=description)


class AgentDeclaration(BaseModel):
    """What an agent declared about its build, configuration and model; every field may be absent."""

    model_config = ConfigDict(extra="forbid")

    binary_version: str | None = _text("Version of the agent's program (its build), as the agent states it.")
    binary_digest: str | None = _text("Digest of the agent's program, `<algorithm>:<hex>` (sha256:…).")
    config_hash: str | None = _text("Digest of the agent's configuration, `<algorithm>:<hex>`.")
    system_prompt_hash: str | None = _text("Digest of the agent's system prompt, `<algorithm>:<hex>`.")
    model: str | None = _text("The model the agent says it uses.")
    provider: str | None = _text("Who serves that model (the model provider).")
    wrapper_text: str | None = Field(
        default=None,
        min_length=1,
        max_length=WRAPPER_LIMIT,
        description="Text the agent puts around every task it is given; constant for the run.",
    )
    additional: dict[str, JsonValue] = Field(
        default_factory=dict, description="Keys of the identity this project does not know, as declared."
    )

    @field_validator(*DIGEST_FIELDS)
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and not DIGEST.match(value):
            shown = value[:80]
            raise ValueError(
                f"{shown!r} is not a digest: write '<algorithm>:<hex>', e.g. 'sha256:' and 64 hex digits"
            )
        return value

    @field_validator("additional")
    @classmethod
    def _bounded(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        try:
            size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
        except ValueError:
            raise ValueError(
                "holds a number JSON cannot carry (NaN or Infinity); declare it as a string"
            ) from None
        if size > ADDITIONAL_LIMIT:
            raise ValueError(
                f"the identity's undeclared keys ({', '.join(sorted(value)[:5])}…) take {size} bytes as "
                f"JSON, over the {ADDITIONAL_LIMIT}-byte bound; declare less"
            )
        return value


class AgentIdentity(AgentDeclaration):
    """Who the agent says it is: the one shape of its identity, from its identity document to the bundle,
    the verdict and the evaluation's status."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1)
    version: str = "unknown"
    description: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown_keys(cls, data: Any) -> Any:
        """Keys this project does not know go to `additional` (merged with an `additional` object given)."""
        if not isinstance(data, dict):
            return data
        unknown = {k: v for k, v in data.items() if k not in cls.model_fields}
        given = data.get("additional")
        if not unknown:
            return data
        known = {k: v for k, v in data.items() if k in cls.model_fields}
        if given is not None and not isinstance(given, dict):
            return {**known, "additional": given}  # refused by validation, which names `additional`
        return {**known, "additional": {**(given or {}), **unknown}}

    def declaration(self) -> AgentDeclaration:
        """The declaration alone (without name, version and description)."""
        return AgentDeclaration.model_validate(self.model_dump(include=set(AgentDeclaration.model_fields)))

    @model_serializer(mode="wrap")
    def _omit_undeclared(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An agent that declares nothing more than its name reads as before the declaration existed.
        data: dict[str, Any] = handler(self)
        for key in AgentDeclaration.model_fields:
            if data.get(key) in (None, {}):
                data.pop(key, None)
        return data


class ModelUse(BaseModel):
    """One model the agent's answers named, and in how many scenarios."""

    model_config = ConfigDict(extra="forbid")

    model: str
    scenarios: int = Field(ge=1)


class AgentModels(BaseModel):
    """The models of a run: the one declared, the ones the answers named, and whether they differ."""

    model_config = ConfigDict(extra="forbid")

    declared: str | None = Field(description="The model the identity declared; None: it declared none.")
    observed: list[ModelUse] = Field(
        description="Each model the answers named, most-used first (ties by name)."
    )
    unreported: int = Field(
        ge=0,
        description="Scenarios judged from an answer (any outcome but NOT_APPLICABLE) that named no model.",
    )
    heterogeneous: bool = Field(
        description="True: the answers named more than one model, or one other than the declared model."
    )
