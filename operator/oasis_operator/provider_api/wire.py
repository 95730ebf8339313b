"""The OASIS provider API's request bodies (SI provider guide §4), parsed once, with errors naming the field.

The public runner sends state entries in a normalised form of its own (`kind` and `name` split out of
`resource`, the profile's other keys moved under `spec`); `oasis_state_entry` turns either form back into
the scenario's own entry, so the twin builder sees exactly what the scenario declares.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# Keys the runner keeps at the top of a normalised entry; everything else it moves under `spec`.
TOP_LEVEL_KEYS = ("namespace", "zone", "labels", "annotations", "data")
OBSERVATION_TYPES = ("audit_log", "resource_state", "state_diff")


class WireError(ValueError):
    """A request the API cannot act on: the HTTP status, the field at fault and what to fix."""

    def __init__(self, status: int, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.status = status
        self.field = field
        self.problem = problem

    def document(self) -> dict[str, Any]:
        """The error body: `status: error` (the guide's failure status), the message and the field."""
        return {"status": "error", "error": str(self), "field": self.field}


class _Body(BaseModel):
    # The runner may grow fields; unknown ones are ignored rather than refused.
    model_config = ConfigDict(extra="ignore")


class ScopeBody(_Body):
    namespaces: list[str] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)


class AgentBody(_Body):
    mode: str = ""
    tools: list[str] = Field(default_factory=list)
    scope: ScopeBody = Field(default_factory=ScopeBody)
    principal: str = ""


class EnvironmentBody(_Body):
    type: str
    state: list[dict[str, Any]] = Field(default_factory=list)


class ProvisionBody(_Body):
    scenario_id: str = Field(min_length=1)
    environment: EnvironmentBody
    agent: AgentBody = Field(default_factory=AgentBody)
    tier: int = Field(default=1, ge=1, le=3)


class EnvironmentBodyRef(_Body):
    environment_id: str = Field(min_length=1)


class ResourceFilter(_Body):
    kind: str = Field(min_length=1)
    name: str = Field(min_length=1)
    namespace: str | None = None


class SnapshotBody(EnvironmentBodyRef):
    resources: list[ResourceFilter] = Field(default_factory=list)


class ObserveBody(EnvironmentBodyRef):
    observation_type: Literal["audit_log", "resource_state", "state_diff"]
    parameters: dict[str, Any] = Field(default_factory=dict)


class InjectBody(EnvironmentBodyRef):
    state: list[dict[str, Any]] = Field(min_length=1)


M = TypeVar("M", bound=_Body)


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_body(model: type[M], raw: bytes) -> M:
    """`raw` as `model`; a body that is not a JSON object, or a bad field, is a 400 naming the field."""
    try:
        document = json.loads(raw or b"null")
    except ValueError as exc:
        raise WireError(400, "", f"the body is not JSON ({exc}); send a JSON object") from None
    if not isinstance(document, dict):
        raise WireError(400, "", f"the body must be a JSON object, not {type(document).__name__}")
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _field(tuple(first["loc"]))
        wanted = first["msg"]
        if first["type"] == "literal_error" and where == "observation_type":
            wanted = f"must be one of {', '.join(OBSERVATION_TYPES)}"
        raise WireError(400, where, wanted) from None


def oasis_state_entry(entry: dict[str, Any], where: str) -> dict[str, Any]:
    """One state entry in the scenario's form (`resource: kind/name` plus the profile's keys)."""
    if "resource" in entry:
        if not isinstance(entry["resource"], str) or "/" not in entry["resource"]:
            raise WireError(400, f"{where}.resource", "must be a string of the form kind/name")
        return dict(entry)
    kind, name = entry.get("kind"), entry.get("name")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        raise WireError(400, where, "needs `resource: kind/name`, or `kind` and `name` (the runner's form)")
    spec = entry.get("spec") or {}
    if not isinstance(spec, dict):
        raise WireError(400, f"{where}.spec", "must be an object")
    out: dict[str, Any] = {"resource": f"{kind}/{name}"}
    out.update({k: entry[k] for k in TOP_LEVEL_KEYS if k in entry})
    out.update(spec)
    return out


def state_key(entry: dict[str, Any]) -> tuple[str, str]:
    """How two state entries are recognised as the same declared resource: resource and namespace."""
    return str(entry.get("resource", "")).lower(), str(entry.get("namespace") or "")
