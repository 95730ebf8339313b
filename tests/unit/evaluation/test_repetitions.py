"""Repeated runs during an evaluation: which runs are still to do (also after a restart), the runs'
book, their document sets, and a resume that reloads the finished runs instead of running them again."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.cli.report_cmds import bundle_files
from oasis_operator.engine.replay import load_bundle
from oasis_operator.evaluation.plan import RunStopped
from oasis_operator.evaluation.repetitions import RunBook, finished_runs, pending_runs, tagged
from oasis_operator.evaluation.run_state import RunState, set_name
from oasis_operator.evaluation.start import load_runs
from oasis_operator.evaluation.store import configmap_name
from oasis_operator.models.crd import (
    AgentSpec,
    EvaluationRef,
    HttpAgent,
    OASISEvaluationSpec,
    OASISEvaluationStatus,
    ProfileRef,
)
from oasis_operator.models.results import ScenarioOutcome
from oasis_operator.models.scenario import Classification
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.status.rows import excluded_row, initial_row, run_finished, with_runs
from oasis_operator.status.writer import StatusWriter
from tests.unit.engine.test_aggregate import safety

PROFILE = load_profile(default_profile_path())
SAFETY = [s for s in PROFILE.scenarios if s.classification.value == "safety"][:3]
BUNDLES = Path(__file__).parents[1] / "engine" / "fixtures" / "bundles"
OWNER = EvaluationRef(namespace="ns", name="ev", uid="u-1")
P, F = ScenarioOutcome.PASS, ScenarioOutcome.FAIL


def _spec(repetitions: int) -> OASISEvaluationSpec:
    return OASISEvaluationSpec(
        profile=ProfileRef(name="software-infrastructure"),
        agent=AgentSpec(http=HttpAgent(url="http://agent")),
        repetitions=repetitions,
    )


def test_repetitions_default_to_one_and_are_bounded() -> None:
    assert _spec(1).repetitions == 1
    assert OASISEvaluationSpec.model_validate(_spec(1).model_dump(exclude={"repetitions"})).repetitions == 1
    for bad in (0, 21):
        with pytest.raises(ValueError, match="repetitions"):
            OASISEvaluationSpec.model_validate({**_spec(1).model_dump(), "repetitions": bad})


def test_runs_are_scheduled_round_by_round_and_finished_ones_are_skipped() -> None:
    rows = [with_runs(initial_row(s), 3) for s in SAFETY]
    rows[1] = run_finished(run_finished(rows[1], 1, "PASS"), 3, "FAIL")
    assert pending_runs(rows, Classification.SAFETY, 3) == [
        (0, 1), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (2, 3),
    ]  # fmt: skip
    assert pending_runs(rows, Classification.CAPABILITY, 3) == []
    assert finished_runs(rows[1]) == [1, 3]


def test_a_single_run_evaluation_schedules_scenarios_as_before() -> None:
    rows = [initial_row(s) for s in SAFETY]
    rows[2] = excluded_row(SAFETY[2], ["no zones"])
    assert pending_runs(rows, Classification.SAFETY, 1) == [(0, None), (1, None)]


def test_every_run_has_its_own_document_set() -> None:
    assert set_name(4) == "scenario-04"
    assert set_name(4, 2) == "scenario-04-run-02"
    assert set_name(4, 12) != set_name(4, 1)


def test_the_book_combines_a_scenario_once_every_run_is_over() -> None:
    book = RunBook(3)
    book.record("s", 1, safety("s", P), "cm-1")
    book.record("s", 2, safety("s", F), "cm-2")
    assert not book.complete("s")
    book.record("s", 3, None, "cm-3")
    assert book.complete("s")
    combined = book.combined("s")
    assert combined is not None
    assert combined.outcome is F
    assert book.evidence_of("s", combined) == "cm-2"


def test_a_bundle_is_tagged_with_its_run_only_when_the_scenario_repeats() -> None:
    bundle = load_bundle(BUNDLES / "de-direct-secret-leak.json")
    assert tagged(bundle, None, 1) is bundle
    repetition = tagged(bundle, 2, 3).repetition
    assert repetition is not None
    assert (repetition.run, repetition.of) == (2, 3)


def _run(rows: list[object], repetitions: int) -> RunState:
    status = OASISEvaluationStatus(scenarios=rows)  # type: ignore[arg-type]
    writer = StatusWriter(ApiClient(), OWNER, status, lambda: 1, stored={})
    return RunState(owner=OWNER, spec=_spec(repetitions), scenarios=SAFETY, writer=writer)


def test_a_resume_reloads_finished_runs_and_leaves_the_others_to_run() -> None:
    first = run_finished(run_finished(with_runs(initial_row(SAFETY[0]), 3), 1, "PASS"), 2, "UNEVALUABLE")
    run = _run([first], 3)
    stored = {
        set_name(0, 1): {"result.json": safety(SAFETY[0].id, P).model_dump_json(), "bundle.json": "{}"},
        set_name(0, 2): {"result.json": safety(SAFETY[0].id, ScenarioOutcome.UNEVALUABLE).model_dump_json()},
        set_name(0, 3): {"bundle.json": "{}"},  # in flight when the operator stopped: not in the row
    }
    load_runs(run, 0, stored)
    assert run.book.results[SAFETY[0].id][1] is not None
    unevaluable = run.book.results[SAFETY[0].id][2]
    assert unevaluable is not None
    assert unevaluable.outcome is ScenarioOutcome.UNEVALUABLE
    assert 3 not in run.book.results[SAFETY[0].id]
    assert run.book.evidence[SAFETY[0].id][1] == configmap_name("ev", "scenario-00-run-01", 0)
    assert SAFETY[0].id not in run.results  # not over: no result yet
    assert pending_runs(run.rows, Classification.SAFETY, 3) == [(0, 3)]


def test_a_resume_of_a_finished_repeated_scenario_recombines_its_runs() -> None:
    row = with_runs(initial_row(SAFETY[0]), 2)
    row = run_finished(run_finished(row, 1, "PASS"), 2, "FAIL").model_copy(update={"result": "FAIL"})
    run = _run([row], 2)
    stored = {
        set_name(0, n): {"result.json": safety(SAFETY[0].id, o).model_dump_json()}
        for n, o in ((1, P), (2, F))
    }
    load_runs(run, 0, stored)
    result = run.results[SAFETY[0].id]
    assert result.outcome is F
    assert result.repetitions is not None
    assert result.repetitions.flaky


def test_a_resume_with_a_lost_run_stops_naming_it() -> None:
    row = run_finished(with_runs(initial_row(SAFETY[0]), 2), 2, "PASS")
    with pytest.raises(RunStopped, match=f"run 2 of {SAFETY[0].id} is missing"):
        load_runs(_run([row], 2), 0, {})


def test_report_get_writes_one_bundle_file_per_run() -> None:
    sets = {
        "scenario-00": {"bundle.json": "a"},
        "scenario-01-run-01": {"bundle.json": "b1"},
        "scenario-01-run-02": {"bundle.json": "b2", "result.json": "{}"},
        "scenario-01-run-03": {"result.json": "{}"},
        "report": {"report.json": "{}"},
    }
    rows = [{"id": "one"}, {"id": "two"}]
    assert bundle_files(rows, sets) == {"one.json": "a", "two.run-01.json": "b1", "two.run-02.json": "b2"}
