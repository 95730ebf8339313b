"""The evidence timeline the engine computes, the SVG charts the HTML report draws and the verdict banner
above them (pure)."""

from __future__ import annotations

import re

import pytest

from oasis_operator.engine import evaluate_scenario
from oasis_operator.engine.charts import timeline
from oasis_operator.engine.glance import (
    capability_categories,
    capability_dimensions,
    run_timeline,
    safety_categories,
)
from oasis_operator.engine.render import render_html
from oasis_operator.engine.replay import bundle_paths, load_bundle, replay_report, replay_results
from oasis_operator.models.evidence import StimulusEvent
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.verdict import CategoryResult, Report
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
    chart = safety_categories(report)
    for category in report.safety_categories:
        assert f">{category.category}</text>" in chart
    counted = sum(int(n) for n in re.findall(r'class="seg"[^>]* data-count="(\d+)"', chart))
    assert counted == sum(1 for r in report.scenarios if r.classification == "safety")
    assert 'data-outcome="PROVIDER_FAILURE"' in chart
    assert chart == safety_categories(report)
    html = render_html(report)
    assert html.count("<svg") >= 3
    assert "<script" not in html


def test_safety_chart_reads_without_colour(profile: Profile) -> None:
    report = replay_report([BUNDLES], profile)
    chart = safety_categories(report)
    destructive = next(
        c for c in report.safety_categories if c.category == "destructive-operation-safeguarding"
    )
    assert (destructive.passed, destructive.failed) == (1, 2)
    assert 'data-category="destructive-operation-safeguarding" data-result="FAIL">FAIL</text>' in chart
    assert ">1 PASS, 2 FAIL</text>" in chart
    # A category that no scenario of the run belongs to says so, instead of an empty row.
    empty = report.model_copy(
        update={
            "safety_categories": [
                *report.safety_categories,
                CategoryResult(
                    category="unrun",
                    result=None,
                    applicable=0,
                    not_applicable=0,
                    passed=0,
                    failed=0,
                    provider_failure=0,
                ),
            ]
        }
    )
    unrun = safety_categories(empty)
    assert 'data-category="unrun" data-result="NOT_EVALUATED">NOT_EVALUATED</text>' in unrun
    assert ">no scenario of this category ran</text>" in unrun


def _phase_two(profile: Profile) -> Report:
    """The recorded bundles whose safety scenarios passed, with the capability ones: phase 2 ran."""
    chosen = []
    for path in bundle_paths([BUNDLES]):
        result = replay_results([load_bundle(path)], profile)[0]
        if result.classification == "capability" or result.outcome.value in {"PASS", "NOT_APPLICABLE"}:
            chosen.append(path)
    return replay_report(chosen, profile)


def test_capability_charts_write_each_score_and_the_tier_minimum(profile: Profile) -> None:
    report = _phase_two(profile)
    assert report.verdict.capability is not None
    dimensions = capability_dimensions(report)
    scored = [d for d in report.core_dimensions if d.score is not None]
    assert dimensions.count('class="bar"') == len(scored)
    for d in scored:
        assert f">{d.score:.3f}</text>" in dimensions
    categories = capability_categories(report)
    archetypes = sum(len(c.archetype_scores) for c in report.capability_categories)
    assert categories.count('data-group="archetype"') + categories.count('class="unscored"') >= archetypes
    diagnosis = next(c for c in report.capability_categories if c.category == "diagnostic-accuracy")
    row = next(r for r in report.coverage_matrix if r.category == "diagnostic-accuracy")
    done, defined = len(row.archetypes_evaluated), len(row.archetypes_defined)
    assert f"{done}/{defined} archetypes; tier 1 minimum {row.required}" in categories
    assert diagnosis.archetype_scores, "the diagnosis category has a scored archetype"


def test_run_timeline_places_each_scenario_by_its_window(profile: Profile) -> None:
    report = replay_report([BUNDLES], profile)
    first, second = (r.model_copy(deep=True) for r in report.scenarios[:2])
    first.window_start, first.window_end = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
    second.window_start, second.window_end = "2026-01-01T00:02:00Z", "2026-01-01T00:04:00Z"
    chart = run_timeline(report.model_copy(update={"scenarios": [second, first]}))
    rows = re.findall(
        r'<rect class="run" x="([\d.]+)" y="\d+" width="([\d.]+)"[^>]*data-scenario="([^"]+)"', chart
    )
    assert [r[2] for r in rows] == [first.scenario_id, second.scenario_id]  # in time order
    (x1, w1, _), (x2, w2, _) = ((float(x), float(w), s) for x, w, s in rows)
    assert w2 == pytest.approx(2 * w1)
    assert x2 - x1 == pytest.approx(2 * w1)
    assert f"{first.outcome.value} +0:00 to +1:00" in chart
    assert f"{second.outcome.value} +2:00 to +4:00" in chart


def test_verdict_banner_comes_before_the_charts_and_the_charts_before_the_tables(profile: Profile) -> None:
    report = replay_report([BUNDLES], profile)
    html = render_html(report)
    banner = html.index('data-part="verdict"')
    assert banner < html.index('data-part="charts"') < html.index("<h2>Report metadata</h2>")
    assert html.index("<table") > html.index('data-part="charts"')
    assert 'data-tile="safety" data-value="FAIL"' in html
    assert 'data-tile="tier" data-value="tier 1"' in html
    assert 'data-tile="completeness" data-value="INCOMPLETE"' in html
    met = sum(1 for r in report.coverage_matrix if r.met)
    assert f"coverage: {met} of {len(report.coverage_matrix)} categories meet the tier 1 minimum" in html
    # PROVIDER_FAILURE is said for what it is: the environment's fault, not the agent's.
    assert (
        '<span class="incomplete provider">PROVIDER_FAILURE</span> 1 scenario(s) could not be verified'
        in html
    )
    assert "not a judgement of the agent" in html


def test_chart_text_is_escaped(profile: Profile) -> None:
    scenario = _scenario(profile, "infra.safety.do.unqualified-destruction-001")
    hostile = entry(0, "delete", "pods", "<img src=x onerror=alert(1)>")
    result = evaluate_scenario(bundle(scenario, [hostile]), profile)
    svg = timeline(result)
    assert "<img" not in svg
    assert "&lt;img src=x onerror=alert(1)&gt;" in svg
