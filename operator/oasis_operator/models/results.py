"""The result of evaluating one scenario run: status, score and every check with its evidence."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from oasis_operator.models.agent_failure import AgentFailure
from oasis_operator.models.evidence import EvidenceSource
from oasis_operator.models.mutation import NameMutation
from oasis_operator.models.repetitions import Repetitions


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Status(StrEnum):
    """Canonical verdict statuses (Core §3.6). Nothing else is ever produced."""

    PASS = "PASS"  # noqa: S105 - a verdict status, not a password
    FAIL = "FAIL"
    PROVIDER_FAILURE = "PROVIDER_FAILURE"
    # No safety scenario of the phase could be evaluated (all unevaluable, all NOT_APPLICABLE, or none):
    # there is no phase-1 verdict, and certainly not PASS (core rc1.12 §3.6.5).
    NOT_EVALUATED = "NOT_EVALUATED"


class ScenarioOutcome(StrEnum):
    """A scenario's outcome: a safety verdict status, the NOT_APPLICABLE exclusion (Core §3.6.1),
    SCORED for an evaluated capability scenario (capability is a score, never a verdict), or
    UNEVALUABLE for a scenario an agent failure took out of scoring (core rc1.12 §3.6.6)."""

    PASS = "PASS"  # noqa: S105 - a verdict status, not a password
    FAIL = "FAIL"
    PROVIDER_FAILURE = "PROVIDER_FAILURE"
    NOT_APPLICABLE = "NOT_APPLICABLE"
    SCORED = "SCORED"  # capability scenarios: evaluated and scored (capability has no pass/fail)
    UNEVALUABLE = "UNEVALUABLE"  # an agent failure and no forbidden behaviour seen: never PASS, no score


class CheckResult(_Model):
    """One evaluated assertion or verification entry."""

    block: str = Field(description="Where it comes from, e.g. assertions.must_not, verification.api_audit.")
    index: int = Field(ge=0)
    subject: str = Field(description="The expression, behaviour id or description that was checked.")
    method: str = Field(description="How it was decided: audit, state, recipe, containment, transcript.")
    passed: bool
    attempted_only: bool = Field(
        default=False, description="Violated only by refused (non-2xx) attempts, recorded distinctly."
    )
    detail: str = ""
    evidence: list[str] = Field(
        default_factory=list, description="References, e.g. audit#4 PATCH ... -> 200."
    )


class SourceReport(_Model):
    """An evidence source as used by this evaluation."""

    name: str
    evidence_source: EvidenceSource


class TimelineEvent(_Model):
    """One moment of a scenario run as the report's evidence timeline shows it."""

    time: str = Field(
        description="ISO 8601; a check is placed at the last request or watched state it cites, else the end."
    )
    kind: str = Field(
        description="request (the agent's, as recorded), stimulus (applied), state (a watched object's "
        "state a deciding check cites), check (decided)."
    )
    label: str
    status: str = Field(default="", description="Response code of a request; PASS/FAIL of a check.")
    ref: str = Field(default="", description="audit#<seq>, stimuli[<i>], or the check's block[index].")


class ScenarioResult(_Model):
    """Everything the report needs about one scenario."""

    scenario_id: str
    name: str
    description: str
    classification: str
    category: str
    subcategory: str | None = None
    archetype: str
    tier: int
    outcome: ScenarioOutcome
    exclusion_reasons: list[str] = Field(default_factory=list)
    provider_fault: str | None = None
    safety_tolerance: float = 0.0
    measured_deviation: float | None = Field(default=None, description="Percent of checks violated.")
    tolerance_adjusted: bool = False
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    rubric_level: str | None = None
    dimension_contributions: dict[str, float] = Field(default_factory=dict)
    checks: list[CheckResult] = Field(default_factory=list)
    evidence_sources: list[SourceReport] = Field(default_factory=list)
    stimuli: list[str] = Field(default_factory=list)
    tool_calls: int = 0
    audit_entries: int = 0
    refused_attempts: int = 0
    preconditions_observed: list[str] = Field(
        default_factory=list, description="Declared resources and whether the before snapshot held them."
    )
    agent_actions: list[str] = Field(default_factory=list, description="Tool calls as reported, abbreviated.")
    reasoning_excerpt: str = ""
    final_answer_excerpt: str = ""
    window_start: str | None = None
    window_end: str | None = None
    summary: str = ""
    timeline: list[TimelineEvent] = Field(
        default_factory=list, description="Agent requests, stimuli and deciding checks, in time order."
    )
    mutation: NameMutation | None = Field(
        default=None,
        description="The name mapping the agent's twin was built with; the result is written in the "
        "original names, the evidence bundle keeps the new ones the agent saw.",
    )
    agent_failure: AgentFailure | None = Field(
        default=None,
        description="The agent failure of the run (its own report, or a failed agent call), kept beside "
        "the outcome: UNEVALUABLE, or FAIL when a forbidden behaviour was observed all the same.",
    )
    # spec.repetitions > 1: the k runs this result combines (absent for a scenario run once).
    repetitions: Repetitions | None = None

    agent_model: str | None = Field(
        default=None, description="The model the agent's answer said it used; absent when it named none."
    )

    @model_serializer(mode="wrap")
    def _omit_unset_records(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A result without a name mutation, an agent failure or a model the agent named reads as before
        # those existed (golden documents stay as they are).
        data: dict[str, Any] = handler(self)
        for key in ("mutation", "agent_failure", "agent_model", "repetitions"):  # absent: read as before
            if data.get(key) is None:
                data.pop(key, None)
        return data

    @property
    def failed_checks(self) -> list[CheckResult]:
        """Checks that did not pass, in evaluation order."""
        return [c for c in self.checks if not c.passed]
