"""The agent wire protocol (DESIGN §5), compatible with the public reference runner's HTTP adapter.

`GET {url}/identity-and-configuration` answers `IdentityDocument`; `POST {url}` takes an `AgentRequest`
and answers an `AgentResponse`. `environment` and `conversation` are this project's additions; agents
that do not know them ignore them. The identity may declare the agent's build, configuration and model
(`models.agent_identity`), and each answer may name the model that produced it (`model`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from oasis_operator.models.agent_identity import TEXT_LIMIT, AgentIdentity

if TYPE_CHECKING:
    from oasis_operator.models.evidence import ToolAction


class _Lenient(BaseModel):
    """Agents are third-party programs: accept extra keys, keep what we know."""

    model_config = ConfigDict(extra="allow")


class IdentityDocument(_Lenient):
    """The answer to identity-and-configuration: who the agent is and how it is configured."""

    identity: AgentIdentity
    configuration: dict[str, Any] = Field(default_factory=dict)


class AgentScope(BaseModel):
    namespaces: list[str] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)


class AgentEnvironment(BaseModel):
    kubeconfig: str = Field(description="A kubeconfig (YAML) that reaches only this scenario's sandbox.")
    endpoints: dict[str, str] = Field(default_factory=dict, description="Interface type -> URL.")


class ConversationTurn(BaseModel):
    role: Literal["user", "assistant", "system"] = "user"
    content: str


class AgentRequest(BaseModel):
    prompt: str
    tools: list[str] = Field(default_factory=list)
    mode: str = "autonomous"
    scope: AgentScope = Field(default_factory=AgentScope)
    environment: AgentEnvironment | None = None
    conversation: list[ConversationTurn] = Field(default_factory=list)


class AgentAction(_Lenient):
    tool: str
    arguments: Any = None
    result: Any = None
    error: str | None = None

    def to_tool_action(self) -> ToolAction:
        # The evidence models on the operator's side only: an agent process never needs them.
        from oasis_operator.models.evidence import ToolAction  # noqa: PLC0415

        known = {"tool", "arguments", "result", "error", "operation", "reasoning", "trigger", "state_delta"}
        data = {k: v for k, v in self.model_dump().items() if k in known}
        for key in ("result", "error"):
            if data.get(key) is not None and not isinstance(
                data[key], str | dict | list | int | float | bool
            ):
                data[key] = str(data[key])
        return ToolAction.model_validate(data)


class AgentConclusion(_Lenient):
    """Optional structured conclusion: `root_cause`, `evidence[]`, `discarded[{signal, rationale}]`."""

    root_cause: str | None = None
    evidence: list[str] = Field(default_factory=list)
    discarded: list[dict[str, str]] = Field(default_factory=list)


class AgentTrailStep(_Lenient):
    """One step of an audit trail given in the answer (docs/agent-protocol.md). Any shape is kept; the
    evidence side reads `operation` (or `command`), `reason` (or `reasoning`), `trigger`, `before`,
    `after`."""

    step: Any = None
    operation: Any = None
    reason: Any = None
    trigger: Any = None
    before: Any = None
    after: Any = None


class AgentFailureReport(_Lenient):
    """The agent says it could not do the task (core rc1.12): `{"cause": "<non-empty text>"}`.

    A report that is not an object with a non-empty string `cause` makes the whole answer a protocol
    error naming `agent_failure.cause`; it is never read loosely.
    """

    cause: StrictStr = Field(min_length=1, description="Why the agent could not do the task.")

    @field_validator("cause")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must say why the agent could not do the task (it is blank)")
        return value


class AgentResponse(_Lenient):
    actions: list[AgentAction] = Field(default_factory=list)
    reasoning: str | None = None
    final_answer: str | None = None
    conclusion: AgentConclusion | None = None
    model: str | None = Field(
        default=None,
        min_length=1,
        max_length=TEXT_LIMIT,
        description="The model that produced this answer, as the agent names it (kept per scenario).",
    )

    audit_trail: list[AgentTrailStep] = Field(default_factory=list)

    agent_failure: AgentFailureReport | None = Field(
        default=None,
        description="Present only when the agent could not do the task; it can only take the scenario out "
        "of scoring, never make it pass. An empty answer without it is judged as usual.",
    )

    @field_validator("audit_trail", mode="before")
    @classmethod
    def _trail_steps_only(cls, value: Any) -> Any:
        # A trail in a shape we cannot read must not cost the agent its whole answer: keep the mappings.
        return [step for step in value if isinstance(step, dict)] if isinstance(value, list) else []

    @field_validator("agent_failure", mode="before")
    @classmethod
    def _report_is_an_object(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, dict | AgentFailureReport):
            raise ValueError(
                f'must be an object {{"cause": "<why>"}}, not {type(value).__name__}; '
                "set agent_failure.cause to a non-empty string"
            )
        return value


AgentErrorKind = Literal["timeout", "transport", "protocol", "exit"]


class AgentOutcome(BaseModel):
    """What one agent call produced: a response, or the reason there is none (never a provider fault)."""

    response: AgentResponse | None = None
    error_kind: AgentErrorKind | None = None
    error: str | None = None
    seconds: float = 0.0
    stderr_tail: str | None = None
