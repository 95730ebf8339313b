"""Comparability of a run's results (core rc1.12, Reporting §3.3): what was scored, what an agent
failure took out of scoring, and the run's agent failures. Pure.

* A scenario is *scored* when the engine judged it: PASS or FAIL (safety) or SCORED (capability).
  PROVIDER_FAILURE and NOT_APPLICABLE are neither scored nor unevaluable.
* A group (safety category, capability category, archetype, coverage) is *comparable* only when none of
  its scenarios is UNEVALUABLE: its score or status then covers everything it was meant to.
* The run's ``agent_failures`` list every scenario that carries an agent failure, whatever its status
  (UNEVALUABLE, or FAIL when a forbidden behaviour was observed all the same); any one of them means the
  run makes no conformance claim. The count is always given, 0 included.
"""

from __future__ import annotations

from collections.abc import Iterable

from oasis_operator.models.agent_failure import AgentFailure
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import (
    AgentFailureEntry,
    AgentFailures,
    ArchetypeScore,
    Comparability,
    UnevaluatedEntry,
)

SCORED_OUTCOMES = frozenset({ScenarioOutcome.PASS, ScenarioOutcome.FAIL, ScenarioOutcome.SCORED})


def comparability(results: Iterable[ScenarioResult]) -> Comparability:
    """Scored and unevaluable counts of a group of results, and whether the group is comparable."""
    members = list(results)
    unevaluable = sum(1 for r in members if r.outcome is ScenarioOutcome.UNEVALUABLE)
    return Comparability(
        comparable=unevaluable == 0,
        scenarios_scored=sum(1 for r in members if r.outcome in SCORED_OUTCOMES),
        unevaluable=unevaluable,
    )


def archetype_table(members: list[ScenarioResult]) -> dict[str, ArchetypeScore]:
    """Each archetype of one capability category that has a run scenario: mean score and comparability."""
    table: dict[str, ArchetypeScore] = {}
    ran = {r.archetype for r in members if r.outcome is not ScenarioOutcome.NOT_APPLICABLE}
    for archetype in sorted(ran):
        group = [r for r in members if r.archetype == archetype]
        scores = [r.score for r in group if r.outcome is ScenarioOutcome.SCORED and r.score is not None]
        counts = comparability(group)
        table[archetype] = ArchetypeScore(
            score=round(sum(scores) / len(scores), 6) if scores else None, **counts.model_dump()
        )
    return table


def failure_of(result: ScenarioResult) -> AgentFailure | None:
    """The agent failure a result carries; an UNEVALUABLE result always has one (its summary at worst)."""
    if result.agent_failure is None and result.outcome is ScenarioOutcome.UNEVALUABLE:
        return AgentFailure(cause=result.summary or "unevaluable: no cause recorded")
    return result.agent_failure


def unevaluated_entries(results: Iterable[ScenarioResult]) -> list[UnevaluatedEntry]:
    """Every UNEVALUABLE scenario with its cause, by scenario id."""
    entries = []
    for result in sorted(results, key=lambda r: r.scenario_id):
        failure = failure_of(result)
        if result.outcome is ScenarioOutcome.UNEVALUABLE and failure is not None:
            entries.append(
                UnevaluatedEntry(scenario_id=result.scenario_id, cause=failure.cause, source=failure.source)
            )
    return entries


def agent_failures(results: Iterable[ScenarioResult]) -> AgentFailures:
    """The run's agent failures: the count, and each scenario's id, cause, source and status."""
    entries = []
    for result in sorted(results, key=lambda r: r.scenario_id):
        failure = failure_of(result)
        if failure is not None:
            entries.append(
                AgentFailureEntry(
                    scenario_id=result.scenario_id,
                    cause=failure.cause,
                    source=failure.source,
                    status=result.outcome,
                )
            )
    return AgentFailures(count=len(entries), scenarios=entries)
