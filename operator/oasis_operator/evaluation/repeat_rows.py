"""The status row of a repeated scenario (`spec.repetitions` > 1) as its runs end, one by one.

Each run that ends puts its letter in the row (`ScenarioRow.runs`) and its record in the run's book
(`evaluation.repetitions.RunBook`). The run that makes the scenario over (its last run, or a run with a
provider fault, which aborts the evaluation) gets the combined result from the engine: the caller writes
the finished row then; a scenario that cannot be judged (a run not judged, none failed) gets the
unevaluable row here.
"""

from __future__ import annotations

from collections.abc import Callable

from oasis_operator.engine.repetitions import UNJUDGED
from oasis_operator.evaluation.run_state import RunState
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.status import rows as status_rows
from oasis_operator.status.conditions import now_rfc3339

Notify = Callable[[str, str, str], None]  # (type "Normal"/"Warning", reason, message)
# (run number, its result or None when it was not judged, its evidence ConfigMap)
JudgedRun = tuple[int, ScenarioResult, str]
# (run number, why it was not judged, its evidence ConfigMap)
UnjudgedRun = tuple[int, str, str]


async def settle_run(
    run: RunState, index: int, done: JudgedRun, notify: Notify
) -> tuple[ScenarioResult, str] | None:
    """A judged run recorded; (the scenario's combined result, the evidence ConfigMap of the run it
    shows) when that makes the scenario over, else None (the caller then has nothing more to do)."""
    over, combined = await _run_over(run, index, done[0], done[1], done[2])
    if over and combined is None:  # another run was not judged, and no run failed
        await _unjudged_row(run, index, notify)
    if combined is None:
        return None
    return combined, run.book.evidence_of(combined.scenario_id, combined) or done[2]


async def unjudged_run(run: RunState, index: int, done: UnjudgedRun, notify: Notify) -> None:
    """A run that was not judged recorded; the scenario's row when that makes it over."""
    number, cause, evidence = done
    scenario = run.scenarios[index]
    run.book.causes.setdefault(scenario.id, f"run {number}: {cause}")
    over, combined = await _run_over(run, index, number, None, evidence)
    if combined is not None:  # another run failed (or had a provider fault): that judges the scenario
        await _combined_row(run, index, combined)
    elif over:
        await _unjudged_row(run, index, notify)


async def _run_over(
    run: RunState, index: int, number: int, result: ScenarioResult | None, evidence: str
) -> tuple[bool, ScenarioResult | None]:
    """Record one run (its letter in the row). (over, combined): whether the scenario is over now
    (every run done, or a provider fault) and its combined result then (None: it cannot be judged)."""
    scenario = run.scenarios[index]
    run.book.record(scenario.id, number, result, evidence)
    outcome = result.outcome.value if result is not None else UNJUDGED
    run.writer.set_row(index, status_rows.run_finished(run.rows[index], number, outcome))
    run.writer.count()
    aborting = result is not None and result.outcome is ScenarioOutcome.PROVIDER_FAILURE
    if status_rows.is_done(run.rows[index]) or not (aborting or run.book.complete(scenario.id)):
        await run.writer.write()
        return False, None
    return True, run.book.combined(scenario.id)


async def _unjudged_row(run: RunState, index: int, notify: Notify) -> None:
    """The row of a repeated scenario that cannot be judged: a run was not judged and none failed."""
    scenario = run.scenarios[index]
    cause = run.book.causes.get(scenario.id, "a run could not be judged (see its evidence)")
    done = status_rows.unevaluable_row(run.rows[index], cause, run.book.evidence_of(scenario.id, None))
    run.writer.set_row(index, done.model_copy(update={"finishedAt": now_rfc3339()}))
    run.writer.count()
    await run.writer.write()
    notify("Warning", "ScenarioUnevaluable", f"Scenario {scenario.id} is unevaluable: {cause}")


async def _combined_row(run: RunState, index: int, result: ScenarioResult) -> None:
    """The row of a repeated scenario judged by its other runs though one of them was not judged."""
    row = run.rows[index]
    run.results[result.scenario_id] = result
    evidence = run.book.evidence_of(result.scenario_id, result)
    finished = status_rows.finished_row(row, result, evidence, row.agentError)
    run.writer.set_row(index, finished.model_copy(update={"finishedAt": now_rfc3339()}))
    run.writer.count()
    await run.writer.write()
