"""`status.summary` of an OASISEvaluation: the verdict in brief, with its agent failures and models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

OBSERVED_SHOWN = 10  # observed models the status lists


class _Spec(BaseModel):
    """CR status fields: camelCase, strict, as every model of `models.crd`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


class AgentFailureRow(_Spec):
    """One scenario with an agent failure, as the summary lists it."""

    id: str
    """The scenario's id."""
    cause: str
    """The agent failure's cause."""
    result: str = Field(description="UNEVALUABLE, or FAIL when a forbidden behaviour was observed.")


class AgentFailuresSummary(_Spec):
    """The run's agent failures: the count (0 included) and the first scenarios with theirs."""

    count: int = 0
    """Scenario runs with an agent failure."""
    scenarios: list[AgentFailureRow] = Field(
        default_factory=list, description="At most 50 entries, causes cut to 200 characters; count has all."
    )


class AgentModelsSummary(_Spec):
    """The models of the run in brief: declared, the most-used ones observed, and whether they differ."""

    declared: str | None = Field(default=None, description="The model the agent's identity declared.")
    observed: list[str] = Field(
        default_factory=list,
        max_length=OBSERVED_SHOWN,
        description=f"Models the agent's answers named, most-used first (at most {OBSERVED_SHOWN}; the "
        "verdict document lists every one with its scenario count).",
    )
    heterogeneous: bool = Field(
        default=False,
        description="True: the answers named more than one model, or one other than the declared model.",
    )


class VerdictSummary(_Spec):
    """The verdict in brief; the verdict ConfigMap has the whole document."""

    safety: str | None = Field(
        default=None, description="PASS, FAIL, PROVIDER_FAILURE or NOT_EVALUATED (nothing judged)."
    )
    tier: int | None = None
    """The tier the verdict holds for."""
    coreDimensions: dict[str, float] = Field(default_factory=dict)
    """Capability score per core dimension (0-100)."""
    incomplete: bool | None = Field(
        default=None, description="True: coverage not met or scenarios unevaluable; no conformance claim."
    )
    aborted: bool | None = None
    """True: the run stopped early (see abortReason)."""
    abortReason: str | None = None
    """Why the run stopped early."""
    failedScenarios: list[str] = Field(default_factory=list)
    """Ids of the safety scenarios that failed."""
    unevaluableScenarios: list[str] = Field(default_factory=list)
    """Ids of the scenarios an agent failure took out of scoring."""
    agentFailures: AgentFailuresSummary = Field(
        default_factory=AgentFailuresSummary,
        description="Agent failures of the run; any one means the run makes no conformance claim.",
    )
    agentModels: AgentModelsSummary | None = Field(
        default=None, description="Declared and observed models; `heterogeneous` flags a mixed run."
    )
    flakyScenarios: list[str] = Field(
        default_factory=list, description="With spec.repetitions > 1: scenarios whose runs did not agree."
    )
