"""Per-scenario rows, counts and the verdict summary of an evaluation's status, as models (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from oasis_operator.models.agent_identity import AgentModels
from oasis_operator.models.crd import (
    Progress,
    ScenarioRow,
    ScoreSpread,
)
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Classification, Scenario
from oasis_operator.models.verdict import Verdict
from oasis_operator.models.verdict_summary import (
    OBSERVED_SHOWN,
    AgentFailureRow,
    AgentFailuresSummary,
    AgentModelsSummary,
    VerdictSummary,
)

MESSAGE_LIMIT = 300
CAUSE_LIMIT = 200
AGENT_FAILURES_LISTED = 50  # the summary stays small for a run of any size; the count has them all
# One letter per run in `ScenarioRow.runs` (spec.repetitions > 1); an outcome not listed shows as "?".
RUN_CODES = {"PASS": "P", "FAIL": "F", "PROVIDER_FAILURE": "E", "SCORED": "S", "UNEVALUABLE": "U"}
NOT_RUN = "-"
JUDGED_CODES = frozenset("PFES")  # runs the engine decided (not an unevaluable one)


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
        done = done.model_copy(update={"agentError": short(agent_error, CAUSE_LIMIT)})
    if result.outcome is ScenarioOutcome.UNEVALUABLE and result.agent_failure is not None:
        done = done.model_copy(update={"unevaluable": short(result.agent_failure.cause, CAUSE_LIMIT)})
    if trimmed:
        note = (f"{done.message}; " if done.message else "") + "evidence trimmed (trimmed.txt)"
        done = done.model_copy(update={"message": note})
    return with_repetitions(done, result)


def with_runs(row: ScenarioRow, repetitions: int) -> ScenarioRow:
    """A planned row with one `-` per run when the scenario runs more than once."""
    return row.model_copy(update={"runs": NOT_RUN * repetitions}) if repetitions > 1 else row


def run_code(outcome: str) -> str:
    """The letter of one run's outcome in `ScenarioRow.runs`."""
    return RUN_CODES.get(outcome, "?")


def run_finished(row: ScenarioRow, run: int, outcome: str) -> ScenarioRow:
    """The row with run `run` (1-based) marked by its outcome's letter."""
    runs = list(row.runs or "")
    runs[run - 1] = run_code(outcome)
    return row.model_copy(update={"runs": "".join(runs)})


def with_repetitions(row: ScenarioRow, result: ScenarioResult) -> ScenarioRow:
    """A finished row of a repeated scenario: every run's letter, flaky, and the score's spread."""
    reps = result.repetitions
    if reps is None:
        return row
    runs = list(row.runs or NOT_RUN * max(r.run for r in reps.runs))
    for record in reps.runs:
        runs[record.run - 1] = run_code(record.outcome)
    update: dict[str, object] = {"runs": "".join(runs), "flaky": reps.flaky}
    if reps.score is not None:
        update["scoreSpread"] = ScoreSpread(
            min=round(reps.score.min, 4), max=round(reps.score.max, 4), std=round(reps.score.std, 4)
        )
    return row.model_copy(update=update)


def is_done(row: ScenarioRow) -> bool:
    return row.result is not None


NOT_JUDGED = (None, ScenarioOutcome.NOT_APPLICABLE.value, ScenarioOutcome.UNEVALUABLE.value)


def judged(rows: Sequence[ScenarioRow]) -> bool:
    """Whether any scenario (or any run of a repeated one) has a verdict or score the engine decided
    (exclusions and UNEVALUABLE scenarios do not count: the agent may still be unreachable)."""
    return any(r.result not in NOT_JUDGED or JUDGED_CODES & set(r.runs or "") for r in rows)


def runs_done(row: ScenarioRow) -> int:
    """How many of the row's runs are over (all of them once the scenario is done or excluded)."""
    if is_done(row):
        return len(row.runs or NOT_RUN)
    return sum(1 for code in row.runs or "" if code != NOT_RUN)


def progress(rows: Sequence[ScenarioRow]) -> Progress:
    """Counts for status.progress: done/total over runs, the outcome counts over scenarios."""
    results = [r.result for r in rows]
    return Progress(
        done=sum(runs_done(r) for r in rows),
        total=sum(len(r.runs or NOT_RUN) for r in rows),
        passed=results.count(ScenarioOutcome.PASS.value),
        failed=results.count(ScenarioOutcome.FAIL.value),
        providerFailure=results.count(ScenarioOutcome.PROVIDER_FAILURE.value),
        notApplicable=results.count(ScenarioOutcome.NOT_APPLICABLE.value),
        scored=results.count(ScenarioOutcome.SCORED.value),
        unevaluable=results.count(ScenarioOutcome.UNEVALUABLE.value),
    )


def agent_failures_summary(verdict: Verdict) -> AgentFailuresSummary:
    """status.summary.agentFailures from the verdict: the count, and the first scenarios' causes."""
    failures = verdict.metadata.agent_failures
    return AgentFailuresSummary(
        count=failures.count,
        scenarios=[
            AgentFailureRow(id=f.scenario_id, cause=short(f.cause, CAUSE_LIMIT), result=f.status.value)
            for f in failures.scenarios[:AGENT_FAILURES_LISTED]
        ],
    )


def summary(verdict: Verdict, results: list[ScenarioResult]) -> VerdictSummary:
    """status.summary from the verdict document; an agent failure makes the run incomplete."""
    unevaluable = sorted(r.scenario_id for r in results if r.outcome is ScenarioOutcome.UNEVALUABLE)
    failures = agent_failures_summary(verdict)
    out = VerdictSummary(
        safety=verdict.safety.value,
        tier=verdict.metadata.environment.tier,
        aborted=verdict.metadata.aborted,
        failedScenarios=sorted(r.scenario_id for r in results if r.outcome is ScenarioOutcome.FAIL),
        incomplete=failures.count > 0,
        agentFailures=failures,
    )
    if unevaluable:
        out.unevaluableScenarios = unevaluable
    out.agentModels = agent_models_summary(verdict.metadata.agent_models)
    flaky = sorted(r.scenario_id for r in results if r.repetitions and r.repetitions.flaky)
    if flaky:
        out.flakyScenarios = flaky
    if verdict.metadata.abort_reason:
        out.abortReason = short(verdict.metadata.abort_reason)
    if verdict.capability is not None:
        out.tier = verdict.capability.tier
        out.coreDimensions = {k: round(v, 4) for k, v in sorted(verdict.capability.core_dimensions.items())}
        out.incomplete = failures.count > 0 or not verdict.capability.coverage.complete
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
