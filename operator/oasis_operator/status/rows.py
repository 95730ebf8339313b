"""Per-scenario rows, counts and the verdict summary of an evaluation's status, as models (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from oasis_operator.models.agent_identity import AgentModels
from oasis_operator.models.crd import (
    OBSERVED_SHOWN,
    AgentModelsSummary,
    Progress,
    ScenarioRow,
    VerdictSummary,
)
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Classification, Scenario
from oasis_operator.models.verdict import Verdict

MESSAGE_LIMIT = 300


def short(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` on one line, cut to `limit` characters (status fields are for people scanning a table)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def initial_row(scenario: Scenario) -> ScenarioRow:
    return ScenarioRow(id=scenario.id, classification=scenario.classification, category=scenario.category)


def excluded_row(scenario: Scenario, reasons: list[str]) -> ScenarioRow:
    return initial_row(scenario).model_copy(
        update={"result": ScenarioOutcome.NOT_APPLICABLE.value, "reason": "; ".join(reasons)}
    )


def finished_row(
    row: ScenarioRow,
    result: ScenarioResult,
    evidence: str | None,
    agent_error: str | None,
    *,
    trimmed: bool = False,
) -> ScenarioRow:
    """The row once the engine has judged the scenario; `trimmed`: the stored evidence was cut to fit."""
    done = row.model_copy(update={"result": result.outcome.value})
    if result.score is not None:
        done = done.model_copy(update={"score": round(result.score, 4)})
    failed = [c.subject for c in result.failed_checks][:2]
    message = result.provider_fault or result.summary or ("; ".join(failed) if failed else "")
    if message:
        done = done.model_copy(update={"message": short(message)})
    if evidence:
        done = done.model_copy(update={"evidence": evidence})
    if agent_error:
        done = done.model_copy(update={"agentError": short(agent_error, 200)})
    if trimmed:
        note = (f"{done.message}; " if done.message else "") + "evidence trimmed (trimmed.txt)"
        done = done.model_copy(update={"message": note})
    return done


def unevaluable_row(row: ScenarioRow, cause: str, evidence: str | None) -> ScenarioRow:
    """The row of a scenario whose agent never acted: no result, the cause, and the evidence kept."""
    done = row.model_copy(
        update={"unevaluable": short(cause), "message": "unevaluable: counted in no score", "result": None}
    )
    if evidence:
        done = done.model_copy(update={"evidence": evidence})
    return done


def is_done(row: ScenarioRow) -> bool:
    return row.result is not None or bool(row.unevaluable)


def judged(rows: Sequence[ScenarioRow]) -> bool:
    """Whether any scenario of the run has a result the engine decided (exclusions do not count)."""
    return any(r.result not in (None, ScenarioOutcome.NOT_APPLICABLE.value) for r in rows)


def unevaluated(rows: Sequence[ScenarioRow]) -> list[tuple[str, str]]:
    """(scenario id, cause) of every unevaluable scenario, in row order."""
    return [(r.id, r.unevaluable) for r in rows if r.unevaluable]


def progress(rows: Sequence[ScenarioRow]) -> Progress:
    """Counts for status.progress."""
    results = [r.result for r in rows]
    unevaluable = sum(1 for r in rows if r.unevaluable)
    return Progress(
        done=sum(1 for r in results if r is not None) + unevaluable,
        total=len(rows),
        passed=results.count(ScenarioOutcome.PASS.value),
        failed=results.count(ScenarioOutcome.FAIL.value),
        providerFailure=results.count(ScenarioOutcome.PROVIDER_FAILURE.value),
        notApplicable=results.count(ScenarioOutcome.NOT_APPLICABLE.value),
        scored=results.count(ScenarioOutcome.SCORED.value),
        unevaluable=unevaluable,
    )


def summary(
    verdict: Verdict, results: list[ScenarioResult], unevaluable: list[str] | None = None
) -> VerdictSummary:
    """status.summary from the verdict document; unevaluable scenarios make the run incomplete."""
    out = VerdictSummary(
        safety=verdict.safety.value,
        tier=verdict.metadata.environment.tier,
        aborted=verdict.metadata.aborted,
        failedScenarios=sorted(r.scenario_id for r in results if r.outcome is ScenarioOutcome.FAIL),
        incomplete=bool(unevaluable),
    )
    if unevaluable:
        out.unevaluableScenarios = sorted(unevaluable)
    out.agentModels = agent_models_summary(verdict.metadata.agent_models)
    if verdict.metadata.abort_reason:
        out.abortReason = short(verdict.metadata.abort_reason)
    if verdict.capability is not None:
        out.tier = verdict.capability.tier
        out.coreDimensions = {k: round(v, 4) for k, v in sorted(verdict.capability.core_dimensions.items())}
        out.incomplete = bool(unevaluable) or not verdict.capability.coverage.complete
    return out


def agent_models_summary(models: AgentModels) -> AgentModelsSummary:
    """status.summary.agentModels: the declared model, the most-used observed ones, the flag."""
    return AgentModelsSummary(
        declared=models.declared,
        observed=[u.model for u in models.observed[:OBSERVED_SHOWN]],
        heterogeneous=models.heterogeneous,
    )


def skipped(rows: Sequence[ScenarioRow], classification: Classification, message: str) -> list[ScenarioRow]:
    """Rows of a classification that will not run get a message saying why (their result stays empty)."""
    return [
        r.model_copy(update={"message": message})
        if r.classification is classification and not is_done(r)
        else r
        for r in rows
    ]
