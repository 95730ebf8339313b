"""The status row of a repeated scenario (`spec.repetitions` > 1) as its runs end, one by one.

Each run that ends puts its letter in the row (`ScenarioRow.runs`) and its result in the run's book
(`evaluation.repetitions.RunBook`). The run that makes the scenario over (its last run, or a run with a
provider fault, which aborts the evaluation) gets the combined result from the engine, and the caller
writes the finished row with it.
"""

from __future__ import annotations

from collections.abc import Callable

from oasis_operator.evaluation.run_state import RunState
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.status import rows as status_rows

Notify = Callable[[str, str, str], None]  # (type "Normal"/"Warning", reason, message)
# (run number, its result, its evidence ConfigMap)
JudgedRun = tuple[int, ScenarioResult, str]


async def settle_run(
    run: RunState, index: int, done: JudgedRun, notify: Notify
) -> tuple[ScenarioResult, str] | None:
    """A run recorded (its letter in the row); (the scenario's combined result, the evidence ConfigMap of
    the run it shows) when that makes the scenario over, else None (the caller has nothing more to do)."""
    number, result, evidence = done
    scenario = run.scenarios[index]
    run.book.record(scenario.id, number, result, evidence)
    run.writer.set_row(index, status_rows.run_finished(run.rows[index], number, result.outcome.value))
    run.writer.count()
    aborting = result.outcome is ScenarioOutcome.PROVIDER_FAILURE
    if status_rows.is_done(run.rows[index]) or not (aborting or run.book.complete(scenario.id)):
        await run.writer.write()
        return None
    combined = run.book.combined(scenario.id)
    if combined is None:  # every run has a result, so the engine always decides; never a silent pass
        raise RuntimeError(f"the runs of {scenario.id} gave no combined result")
    if combined.repetitions is not None and combined.repetitions.flaky:
        notify("Warning", "ScenarioFlaky", f"Scenario {scenario.id} is flaky: {combined.summary}")
    return combined, run.book.evidence_of(scenario.id, combined) or evidence
