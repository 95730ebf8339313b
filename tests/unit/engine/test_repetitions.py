"""Repeated runs of a scenario: pass^k, flaky, FAIL > PROVIDER_FAILURE > unjudged > PASS, the score's
spread, pass@k, the verdict's run-level summary, and replay of every run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fixtures_gen import BUNDLES
from hypothesis import given
from hypothesis import strategies as st

from oasis_operator.cli.main import main
from oasis_operator.engine.aggregate import aggregate, capability_scores
from oasis_operator.engine.ci import CiContext, render_ci
from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.render import render_html
from oasis_operator.engine.repetitions import (
    UNJUDGED,
    combine_runs,
    combined_outcome,
    repetitions_summary,
    spread,
)
from oasis_operator.engine.replay import load_bundle, replay_report, replay_results
from oasis_operator.engine.report import build_report
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.profile import Profile
from oasis_operator.models.repetitions import RunIndex
from oasis_operator.models.results import CheckResult, ScenarioOutcome, ScenarioResult, Status
from tests.unit.engine.test_aggregate import RUN, capability, safety

P, F, E, S = (
    ScenarioOutcome.PASS,
    ScenarioOutcome.FAIL,
    ScenarioOutcome.PROVIDER_FAILURE,
    ScenarioOutcome.SCORED,
)
VIOLATION = CheckResult(
    block="assertions.must_not", index=0, subject="delete pod/*", method="audit", passed=False
)


def runs_of(*outcomes: ScenarioOutcome) -> dict[int, ScenarioResult | None]:
    return {
        n: safety("s", o, checks=[VIOLATION] if o is F else [], summary=f"run said {o.value}")
        for n, o in enumerate(outcomes, 1)
    }


def test_a_safety_scenario_passes_only_when_every_run_passes() -> None:
    result = combine_runs(runs_of(P, P, P))
    assert result is not None
    assert result.outcome is P
    assert result.repetitions is not None
    assert result.repetitions.flaky is False
    assert result.repetitions.pass_hat_k is True
    assert result.repetitions.pass_at_k is True
    assert [r.outcome for r in result.repetitions.runs] == ["PASS", "PASS", "PASS"]


def test_one_failing_run_in_three_fails_the_scenario_and_flags_it_flaky() -> None:
    result = combine_runs(runs_of(P, F, P))
    assert result is not None
    assert result.outcome is F
    assert result.failed_checks == [VIOLATION]  # the failing run explains the verdict
    assert result.repetitions is not None
    assert result.repetitions.flaky is True
    assert [(r.run, r.outcome) for r in result.repetitions.runs] == [(1, "PASS"), (2, "FAIL"), (3, "PASS")]
    assert result.repetitions.pass_at_k is True
    assert result.repetitions.pass_hat_k is False
    assert result.summary == "flaky: run 1 PASS, run 2 FAIL, run 3 PASS; run 2: run said FAIL"


def test_fail_beats_provider_failure_beats_pass_among_runs() -> None:
    assert combined_outcome([P, E, F]) is F
    assert combined_outcome([P, E, P]) is E
    assert combined_outcome([S, S]) is S


def test_an_unevaluable_run_keeps_the_scenario_from_passing_but_not_from_failing() -> None:
    u = ScenarioOutcome.UNEVALUABLE
    assert combined_outcome([P, u, P]) is u
    assert combined_outcome([u, F, P]) is F
    assert combined_outcome([u, E]) is E
    result = combine_runs(runs_of(P, u, P))
    assert result is not None
    assert result.outcome is u
    assert result.repetitions is not None
    assert result.repetitions.flaky is True
    assert result.repetitions.pass_hat_k is False


def test_not_applicable_is_never_a_run_outcome_and_no_runs_is_an_error() -> None:
    with pytest.raises(ValueError, match="decided once per scenario"):
        combined_outcome([P, ScenarioOutcome.NOT_APPLICABLE])
    with pytest.raises(ValueError, match="no runs"):
        combine_runs({})


def test_runs_of_different_scenarios_are_refused() -> None:
    with pytest.raises(ValueError, match="different scenarios"):
        combine_runs({1: safety("a", P), 2: safety("b", P)})


def test_an_unjudged_run_leaves_passing_runs_without_a_result() -> None:
    runs = runs_of(P, P)
    runs[3] = None
    assert combine_runs(runs) is None


def test_an_unjudged_run_beside_a_failing_run_is_fail_and_listed() -> None:
    runs = runs_of(P, F)
    runs[3] = None
    result = combine_runs(runs)
    assert result is not None
    assert result.outcome is F
    assert result.repetitions is not None
    assert [r.outcome for r in result.repetitions.runs] == ["PASS", "FAIL", UNJUDGED]
    assert result.repetitions.pass_hat_k is False


@given(st.lists(st.sampled_from([P, F, E, ScenarioOutcome.UNEVALUABLE]), min_size=1, max_size=20))
def test_pass_only_from_all_passing_runs(outcomes: list[ScenarioOutcome]) -> None:
    result = combine_runs(runs_of(*outcomes))
    assert result is not None
    assert (result.outcome is P) == all(o is P for o in outcomes)
    assert result.repetitions is not None
    assert result.repetitions.flaky == (len(set(outcomes)) > 1)
    assert result.repetitions.pass_hat_k == (result.outcome is P)


def test_capability_score_is_the_mean_with_min_max_and_std() -> None:
    runs = {
        n: capability("c", "diagnostic-accuracy", "C-DA-001", score).model_copy(
            update={"dimension_contributions": {"accuracy": score * 0.5}, "rubric_level": "partial"}
        )
        for n, score in enumerate([0.5, 1.0, 0.75], 1)
    }
    result = combine_runs(runs)
    assert result is not None
    assert result.outcome is S
    assert result.score == 0.75
    assert result.dimension_contributions == {"accuracy": 0.375}
    assert result.rubric_level == "partial"  # every run reached the same level
    assert result.repetitions is not None
    assert result.repetitions.score is not None
    assert (result.repetitions.score.min, result.repetitions.score.max) == (0.5, 1.0)
    assert result.repetitions.score.std == round(math.sqrt((0.25**2 + 0.25**2) / 3), 6)
    assert result.repetitions.pass_at_k is None  # no pass threshold for capability scenarios
    assert result.repetitions.pass_hat_k is None
    assert result.repetitions.flaky is False  # every run was scored: scores differ, outcomes do not


def test_runs_of_different_rubric_levels_leave_the_level_out() -> None:
    runs = {
        n: capability("c", "diagnostic-accuracy", "C-DA-001", s).model_copy(update={"rubric_level": level})
        for n, (s, level) in enumerate([(0.0, "none"), (1.0, "full")], 1)
    }
    result = combine_runs(runs)
    assert result is not None
    assert result.score == 0.5
    assert result.rubric_level is None


def test_spread_of_identical_values_has_no_deviation() -> None:
    assert spread([0.4, 0.4]).model_dump() == {"mean": 0.4, "min": 0.4, "max": 0.4, "std": 0.0}
    with pytest.raises(ValueError, match="no values"):
        spread([])


def test_the_verdict_carries_flaky_scenarios_pass_shares_and_dimension_spread(profile: Profile) -> None:
    category = profile.capability_categories[0]
    archetype = category.archetypes[0].id
    repeated = [
        combine_runs(runs_of(P, F, P)),
        combine_runs({n: safety("t", P) for n in (1, 2, 3)}),
        combine_runs(
            {n: capability("c", category.id, archetype, s) for n, s in enumerate([0.2, 0.4, 0.9], 1)}
        ),
    ]
    results = [r for r in repeated if r is not None]
    summary = repetitions_summary(results, lambda rs: capability_scores(rs, profile)[1])
    assert summary is not None
    assert summary.runs_per_scenario == 3
    assert summary.flaky == ["s"]
    assert (summary.pass_hat_k.met, summary.pass_hat_k.of) == (1, 2)
    assert (summary.pass_at_k.met, summary.pass_at_k.of) == (2, 2)
    assert summary.runs == {"c": ["SCORED"] * 3, "s": ["PASS", "FAIL", "PASS"], "t": ["PASS"] * 3}
    assert list(summary.scores) == ["c"]
    assert summary.scores["c"].mean == 0.5
    assert set(summary.core_dimensions) == set(category.dimensions)
    first = summary.core_dimensions[category.dimensions[0]]
    assert (first.min, first.max) == (0.2, 0.9)
    verdict = aggregate(results, profile, RUN)
    assert verdict.safety is Status.FAIL
    assert verdict.document()["verdict"]["metadata"]["repetitions"]["flaky"] == ["s"]


def test_a_run_of_single_runs_has_no_repetition_block(profile: Profile) -> None:
    verdict = aggregate([safety("s", P)], profile, RUN)
    assert verdict.metadata.repetitions is None
    assert "repetitions" not in verdict.document()["verdict"]["metadata"]
    assert "repetitions" not in safety("s", P).model_dump()


def _tagged_bundles(name: str, runs: int, only: list[int] | None = None) -> list[EvidenceBundle]:
    bundle = load_bundle(BUNDLES / name)
    return [
        bundle.model_copy(update={"repetition": RunIndex(run=n, of=runs)})
        for n in (only or range(1, runs + 1))
    ]


def test_replay_judges_every_run_and_combines_them(profile: Profile) -> None:
    single = evaluate_scenario(load_bundle(BUNDLES / "de-direct-secret-leak.json"), profile)
    bundles = _tagged_bundles("de-direct-secret-leak.json", 3)
    results = replay_results(bundles, profile)
    assert len(results) == 1
    assert results[0].outcome is single.outcome
    assert results[0].repetitions is not None
    assert [r.outcome for r in results[0].repetitions.runs] == [single.outcome.value] * 3


def test_replay_refuses_a_missing_or_doubled_run(profile: Profile) -> None:
    with pytest.raises(ValueError, match=r"run\(s\) \[2\] of 3 are missing"):
        replay_results(_tagged_bundles("de-direct-secret-leak.json", 3, [1, 3]), profile)
    with pytest.raises(ValueError, match="run 1 is given twice"):
        replay_results(_tagged_bundles("de-direct-secret-leak.json", 2, [1, 1, 2]), profile)


def test_a_tagged_bundle_round_trips_and_an_untagged_one_keeps_its_text() -> None:
    path = BUNDLES / "de-direct-secret-leak.json"
    bundle = load_bundle(path)
    assert bundle.to_json() == path.read_text(encoding="utf-8")
    tagged = bundle.model_copy(update={"repetition": RunIndex(run=2, of=3)})
    assert type(bundle).model_validate_json(tagged.to_json()) == tagged


def test_the_html_report_shows_the_spread_chart(profile: Profile) -> None:
    assert "spread-chart" not in render_html(replay_report([BUNDLES], profile))
    category = profile.capability_categories[0]
    scored = {n: capability("c", category.id, category.archetypes[0].id, s) for n, s in [(1, 0.2), (2, 0.8)]}
    results = [combine_runs(runs_of(P, F, P)), combine_runs(scored)]
    html = render_html(build_report([r for r in results if r is not None], profile, RUN))
    assert 'data-chart="spread-chart"' in html
    assert 'data-scenario="s" data-run="2" data-outcome="FAIL"' in html
    assert 'data-min="0.200" data-max="0.800" data-std="0.300"' in html
    # Written beside the marks, so it reads without colour; and among the charts at the top.
    assert ">2 PASS, 1 FAIL</text>" in html
    assert ">2 SCORED; score 0.200 to 0.800, mean 0.500</text>" in html
    charts, metadata = html.index('data-part="charts"'), html.index("<h2>Report metadata</h2>")
    assert charts < html.index("spread-chart") < metadata
    assert "pass^k: 0 of 1 safety scenarios; pass@k: 1 of 1. Flaky: s." in html


def test_cli_replay_combines_run_bundles_and_names_a_missing_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bundle in _tagged_bundles("de-direct-secret-leak.json", 2):
        index = bundle.repetition
        assert index is not None
        (tmp_path / f"de.run-{index.run:02d}.json").write_text(bundle.to_json(), encoding="utf-8")
    out = tmp_path / "out" / "results.json"
    out.parent.mkdir()
    assert (
        main(["replay", *(str(tmp_path / f"de.run-0{n}.json") for n in (1, 2)), "--output-file", str(out)])
        == 0
    )
    (result,) = json.loads(out.read_text(encoding="utf-8"))
    assert [r["run"] for r in result["repetitions"]["runs"]] == [1, 2]
    assert main(["replay", str(tmp_path / "de.run-02.json")]) == 2
    assert "the bundles of run(s) [1] of 2 are missing" in capsys.readouterr().err


def test_the_markdown_summary_names_the_runs_and_the_flaky_scenarios(profile: Profile) -> None:
    results = [r for r in (combine_runs(runs_of(P, F, P)),) if r is not None]
    context = CiContext("ns/ev", None)
    text = render_ci(build_report(results, profile, RUN), "markdown", context)
    assert "| Runs | 3 per scenario; pass^k 0/1, pass@k 1/1; flaky: s |" in text
    assert "| Runs |" not in render_ci(build_report([safety("s", P)], profile, RUN), "markdown", context)


def test_an_aborted_scenario_keeps_its_planned_runs_and_never_passes(profile: Profile) -> None:
    fault = safety("s", E, provider_fault="sandbox lost")
    result = combine_runs({1: safety("s", P), 2: fault}, planned=5)
    assert result is not None
    assert result.outcome is E
    assert result.repetitions is not None
    assert (result.repetitions.planned, len(result.repetitions.runs)) == (5, 2)
    assert result.repetitions.pass_hat_k is False
    summary = repetitions_summary([result], lambda rs: capability_scores(rs, profile)[1])
    assert summary is not None
    assert summary.runs_per_scenario == 5
