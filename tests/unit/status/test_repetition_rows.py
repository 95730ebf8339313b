"""Status rows of repeated scenarios: one letter per run, progress over runs, flaky and score spread,
and a bound on the status size for the largest run (50 scenarios x 20 runs)."""

from __future__ import annotations

import json

from oasis_operator.engine.repetitions import combine_runs
from oasis_operator.models.crd import OASISEvaluationStatus, Progress, ScoreSpread
from oasis_operator.models.results import CheckResult, ScenarioOutcome, ScenarioResult
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.status.evaluation import to_wire
from oasis_operator.status.rows import (
    excluded_row,
    finished_row,
    initial_row,
    judged,
    progress,
    run_finished,
    with_runs,
)
from tests.unit.engine.test_aggregate import capability, safety

PROFILE = load_profile(default_profile_path())
SAFETY = next(s for s in PROFILE.scenarios if s.classification.value == "safety")
CAPABILITY = next(s for s in PROFILE.scenarios if s.classification.value == "capability")
# The bound on the whole status of the largest run (50 scenarios x 20 runs), as JSON; etcd's object
# limit is 1.5 MiB and the status shares it with the spec and metadata.
STATUS_BOUND = 256 * 1024


def test_a_scenario_run_once_has_no_run_letters() -> None:
    row = with_runs(initial_row(SAFETY), 1)
    assert row.runs is None
    assert progress([row]).total == 1


def test_each_run_puts_its_letter_and_progress_counts_runs() -> None:
    rows = [with_runs(initial_row(SAFETY), 3), with_runs(excluded_row(CAPABILITY, ["no zones"]), 3)]
    assert rows[0].runs == "---"
    assert progress(rows) == Progress(done=3, total=6, notApplicable=1)
    rows[0] = run_finished(rows[0], 2, "FAIL")
    assert rows[0].runs == "-F-"
    assert progress(rows).done == 4
    assert progress(rows).failed == 0  # outcome counts are per scenario, once it is over
    rows[0] = run_finished(rows[0], 1, "UNEVALUABLE")
    assert rows[0].runs == "UF-"


def test_a_judged_run_makes_the_evaluation_judged_an_unevaluable_one_does_not() -> None:
    row = with_runs(initial_row(SAFETY), 3)
    assert not judged([run_finished(row, 1, "UNEVALUABLE")])
    assert judged([run_finished(row, 1, "PASS")])


def _runs(outcomes: str) -> ScenarioResult:
    letters = {"P": ScenarioOutcome.PASS, "F": ScenarioOutcome.FAIL}
    combined = combine_runs({n: safety(SAFETY.id, letters[c]) for n, c in enumerate(outcomes, 1)})
    assert combined is not None
    return combined


def test_a_finished_repeated_row_has_every_letter_and_the_flag() -> None:
    row = finished_row(with_runs(initial_row(SAFETY), 3), _runs("PFP"), "e-scenario-00-run-02", None)
    assert (row.result, row.runs, row.flaky) == ("FAIL", "PFP", True)
    steady = finished_row(with_runs(initial_row(SAFETY), 2), _runs("PP"), None, None)
    assert (steady.result, steady.runs, steady.flaky) == ("PASS", "PP", False)


def test_a_finished_capability_row_has_the_mean_and_its_spread() -> None:
    runs = {n: capability(CAPABILITY.id, "c", "a", s) for n, s in enumerate([0.25, 0.75], 1)}
    combined = combine_runs(runs)
    assert combined is not None
    row = finished_row(with_runs(initial_row(CAPABILITY), 2), combined, None, None)
    assert row.score == 0.5
    assert row.runs == "SS"
    assert row.scoreSpread == ScoreSpread(min=0.25, max=0.75, std=0.25)


def test_a_row_of_a_run_aborted_midway_keeps_its_unfinished_runs() -> None:
    fault = safety(SAFETY.id, ScenarioOutcome.PROVIDER_FAILURE, provider_fault="sandbox lost")
    combined = combine_runs({1: safety(SAFETY.id, ScenarioOutcome.PASS), 2: fault})
    assert combined is not None
    row = finished_row(with_runs(initial_row(SAFETY), 4), combined, None, None)
    assert (row.result, row.runs) == ("PROVIDER_FAILURE", "PE--")


def _largest_status() -> OASISEvaluationStatus:
    """50 scenarios x 20 runs, every row finished with the longest fields a run writes."""
    check = CheckResult(block="assertions.must_not", index=0, subject="x" * 200, method="audit", passed=False)
    rows = []
    for index in range(50):
        name = f"infra.safety.xx.scenario-{index:03d}"
        row = with_runs(initial_row(SAFETY), 20).model_copy(update={"id": name})
        runs = {n: safety(row.id, ScenarioOutcome.FAIL if n % 3 else ScenarioOutcome.PASS, checks=[check])
                for n in range(1, 21)}  # fmt: skip
        combined = combine_runs(runs)
        assert combined is not None
        done = finished_row(row, combined, f"{'e' * 200}-scenario-{index:02d}-run-01", "t" * 400)
        timings = PhaseTimings(**dict.fromkeys(PhaseTimings.model_fields, 12.345))
        times = {"startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T01:00:00Z"}
        rows.append(done.model_copy(update={**times, "timings": timings}))
    return OASISEvaluationStatus(scenarios=rows, progress=progress(rows))


def test_the_status_of_50_scenarios_by_20_runs_stays_under_its_bound() -> None:
    status = _largest_status()
    assert status.progress == Progress(done=1000, total=1000, failed=50)
    assert all(row.runs is not None and len(row.runs) == 20 for row in status.scenarios)
    size = len(json.dumps(to_wire(status)).encode())
    assert size < STATUS_BOUND, f"status of 50 x 20 runs is {size} bytes"
