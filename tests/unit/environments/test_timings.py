"""Phase timings: the clock, the model, the status row it keeps current and the phase histogram."""

from __future__ import annotations

import pytest

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.render import render_html, render_yaml
from oasis_operator.engine.report import build_report
from oasis_operator.environments.timings import PhaseClock
from oasis_operator.metrics import REGISTRY
from oasis_operator.models.crd import ScenarioRow
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.scenario import Classification
from oasis_operator.models.timings import PHASES, PhaseTimings
from oasis_operator.profiles import default_profile_path, load_profile
from tests.unit.engine.fixtures_gen import BUNDLES
from tests.unit.engine.test_aggregate import RUN


def observed(phase: str) -> float:
    return REGISTRY.get_sample_value("oasis_scenario_phase_seconds_count", {"phase": phase}) or 0.0


def test_phases_add_up_and_are_observed_in_the_histogram() -> None:
    clock = PhaseClock()
    before = observed("dynamics")
    clock.record("dynamics", 0.25)
    clock.record("dynamics", 0.5)
    with clock.phase("engine"):
        pass
    assert clock.seconds["dynamics"] == 0.75
    assert observed("dynamics") == before + 2
    assert set(clock.timings().measured()) == {"dynamics", "engine"}


def test_a_phase_that_raises_still_counts() -> None:
    clock = PhaseClock()
    with pytest.raises(RuntimeError), clock.phase("provision"):
        raise RuntimeError("sandbox gone")
    assert "provision" in clock.seconds


def test_an_unknown_phase_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown phase 'agnet'"), PhaseClock().phase("agnet"):
        pass


def test_the_evaluators_time_leaves_out_the_agent() -> None:
    timings = PhaseTimings(provision=0.2, agent=5.0, engine=0.01, teardown=0.3)
    assert timings.evaluator_seconds() == pytest.approx(0.51)
    assert list(timings.measured()) == ["provision", "agent", "engine", "teardown"]
    assert list(PHASES)[-2:] == ["storage", "teardown"]


def test_a_followed_row_gets_the_teardown_that_ends_later() -> None:
    rows = [ScenarioRow(id="a", classification=Classification.SAFETY, result="PASS")]

    def keep(timings: PhaseTimings) -> None:
        rows[0] = rows[0].model_copy(update={"timings": timings})

    clock = PhaseClock()
    clock.record("provision", 0.4)
    clock.follow(keep)
    assert rows[0].timings == PhaseTimings(provision=0.4)
    rows[0] = rows[0].model_copy(update={"message": "replaced row"})  # the service replaces rows
    clock.record("teardown", 1.25)
    assert rows[0].timings == PhaseTimings(provision=0.4, teardown=1.25)
    assert rows[0].message == "replaced row"
    wire = rows[0].model_dump(mode="json", exclude_unset=True, exclude_none=True)
    assert wire["timings"] == {"provision": 0.4, "teardown": 1.25}


def test_negative_times_are_invalid() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        PhaseTimings(engine=-1)


def test_bundles_without_timings_keep_their_canonical_text(bundle_text: str) -> None:
    bundle = EvidenceBundle.model_validate_json(bundle_text)
    assert '"timings"' not in bundle.to_json()
    timed = bundle.model_copy(update={"timings": PhaseTimings(engine=0.002)})
    again = EvidenceBundle.model_validate_json(timed.to_json())
    assert again.timings == PhaseTimings(engine=0.002)


@pytest.fixture
def bundle_text() -> str:
    return next(iter(sorted(BUNDLES.glob("*.json")))).read_text()


def test_the_report_shows_timings_and_the_verdict_does_not_change() -> None:
    bundle = EvidenceBundle.model_validate_json((BUNDLES / "oe-idempotent-acting.json").read_text())
    profile = load_profile(default_profile_path())
    results = [evaluate_scenario(bundle, profile)]
    timed = RUN.model_copy(
        update={"timings": {bundle.scenario.id: PhaseTimings(provision=0.4, agent=2.0, teardown=0.3)}}
    )
    plain, report = build_report(results, profile, RUN), build_report(results, profile, timed)
    assert report.verdict == plain.verdict, "timings are no input of the verdict"
    assert "timings" not in render_yaml(plain)
    assert f"{bundle.scenario.id}:\n      provision: 0.4" in render_yaml(report)
    html = render_html(report)
    assert "<h2>Phase timings</h2>" in html
    assert f"<td>{bundle.scenario.id}</td><td>0.400</td>" in html
    assert "<td>0.700</td></tr>" in html  # the evaluator's own time: all but the agent's 2.0 s
    assert "Phase timings" not in render_html(plain)
