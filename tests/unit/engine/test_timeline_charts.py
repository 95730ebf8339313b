"""The evidence timeline the engine computes and the SVG charts the HTML report draws (pure)."""

from __future__ import annotations

from oasis_operator.engine import evaluate_scenario
from oasis_operator.engine.charts import capability_bars, safety_grid, timeline
from oasis_operator.engine.render import render_html
from oasis_operator.engine.replay import replay_report
from oasis_operator.models.evidence import StimulusEvent
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from tests.unit.engine.engine_builders import bundle, entry
from tests.unit.engine.fixtures_gen import BUNDLES


def _scenario(profile: Profile, scenario_id: str) -> Scenario:
    return next(s for s in profile.scenarios if s.id == scenario_id)


def test_timeline_orders_requests_stimuli_and_the_checks_that_decided(profile: Profile) -> None:
    scenario = _scenario(profile, "infra.safety.do.unqualified-destruction-001")
    recorded = bundle(scenario, [entry(0, "list", "pods"), entry(1, "deletecollection", "pods", None)])
    recorded.stimuli.append(
        StimulusEvent(time="2026-01-01T00:01:00Z", stimulus="stimuli[1]", trigger="at_start", detail="x")
    )
    result = evaluate_scenario(recorded, profile)
    assert result.outcome.value == "FAIL"
    kinds = [(e.kind, e.ref) for e in result.timeline]
    assert kinds[:3] == [("request", "audit#0"), ("stimulus", "stimuli[1]"), ("request", "audit#1")]
    checks = [e for e in result.timeline if e.kind == "check"]
    # A failed run shows the failed checks only, each at the request it cites.
    assert checks
    assert all(e.status == "FAIL" for e in checks)
    assert {e.time for e in checks} == {"2026-01-01T00:01:01Z"}
    assert len(checks) == len(result.failed_checks)


def test_a_passing_run_shows_every_check_at_the_end_of_its_window(profile: Profile) -> None:
    result = evaluate_scenario(bundle(_scenario(profile, "infra.safety.be.zone-violation-001")), profile)
    assert result.outcome.value == "PASS"
    assert [e.kind for e in result.timeline] == ["check"] * len(result.checks)
    assert {e.time for e in result.timeline} == {"2026-01-01T00:05:00Z"}
    svg = timeline(result)
    assert svg.count('class="event"') == len(result.checks)
    assert "+0.00s check" in svg


def test_charts_cover_every_category_and_are_deterministic(profile: Profile) -> None:
    report = replay_report([BUNDLES], profile)
    grid = safety_grid(report)
    safety = [r for r in report.scenarios if r.classification == "safety"]
    assert grid.count('class="cell"') == len(safety)
    for category in report.safety_categories:
        assert f">{category.category}</text>" in grid
    assert 'data-outcome="PROVIDER_FAILURE"' in grid
    assert grid == safety_grid(report)
    bars = capability_bars(report)
    scored = sum(1 for c in report.capability_categories if c.score is not None)
    scored += sum(1 for d in report.core_dimensions if d.score is not None)
    assert bars.count('class="bar"') == scored
    html = render_html(report)
    assert html.count("<svg") >= 3
    assert "<script" not in html


def test_chart_text_is_escaped(profile: Profile) -> None:
    scenario = _scenario(profile, "infra.safety.do.unqualified-destruction-001")
    hostile = entry(0, "delete", "pods", "<img src=x onerror=alert(1)>")
    result = evaluate_scenario(bundle(scenario, [hostile]), profile)
    svg = timeline(result)
    assert "<img" not in svg
    assert "&lt;img src=x onerror=alert(1)&gt;" in svg
