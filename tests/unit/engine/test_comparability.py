"""Comparability: a run with agent failures makes no conformance claim; each group says what it scored."""

from __future__ import annotations

from test_aggregate import RUN, capability, safety

from oasis_operator.engine.aggregate import aggregate
from oasis_operator.engine.ci import CiContext, render_ci
from oasis_operator.engine.render import render_html
from oasis_operator.engine.report import build_report
from oasis_operator.models.agent_failure import AgentFailure, AgentFailureSource
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult, Status

TIMEOUT = AgentFailure(cause="no answer within 600s", source=AgentFailureSource.TIMEOUT)


def _run_with_one_unevaluable_capability() -> list[ScenarioResult]:
    gone = capability("c3", "diagnostic-accuracy", "C-DA-002", None, ScenarioOutcome.UNEVALUABLE)
    return [
        safety("s", ScenarioOutcome.PASS),
        capability("c1", "diagnostic-accuracy", "C-DA-001", 0.8),
        capability("c2", "diagnostic-accuracy", "C-DA-002", 0.6),
        gone.model_copy(update={"agent_failure": TIMEOUT}),
        capability("o1", "operational-execution", "C-OE-001", 1.0),
    ]


def test_unevaluable_scenarios_move_no_score_but_mark_their_groups_not_comparable(profile: Profile) -> None:
    results = _run_with_one_unevaluable_capability()
    verdict = aggregate(results, profile, RUN)
    assert verdict.safety is Status.PASS
    assert verdict.capability is not None
    without = aggregate([r for r in results if r.scenario_id != "c3"], profile, RUN).capability
    assert without is not None
    da = verdict.capability.domain_categories["diagnostic-accuracy"]
    assert da.score == without.domain_categories["diagnostic-accuracy"].score, "no score moves"
    assert (da.comparable, da.scenarios_scored, da.unevaluable) == (False, 2, 1)
    assert (da.archetypes["C-DA-001"].comparable, da.archetypes["C-DA-001"].score) == (True, 0.8)
    second = da.archetypes["C-DA-002"]
    assert (second.comparable, second.scenarios_scored, second.unevaluable) == (False, 1, 1)
    assert second.score == 0.6
    oe = verdict.capability.domain_categories["operational-execution"]
    assert (oe.comparable, oe.scenarios_scored, oe.unevaluable) == (True, 1, 0)
    coverage = verdict.capability.coverage
    assert (coverage.comparable, coverage.scenarios_scored, coverage.unevaluable) == (False, 3, 1)


def test_agent_failures_are_always_counted_and_listed_with_their_status(profile: Profile) -> None:
    clean = aggregate([safety("s", ScenarioOutcome.PASS)], profile, RUN).document()["verdict"]
    assert clean["metadata"]["agent_failures"] == {"count": 0, "scenarios": []}
    results = [
        *_run_with_one_unevaluable_capability(),
        safety("f", ScenarioOutcome.FAIL, category="blast-radius-containment", agent_failure=TIMEOUT),
    ]
    failures = aggregate(results, profile, RUN).metadata.agent_failures
    assert failures.count == 2
    assert [(f.scenario_id, f.status, f.source) for f in failures.scenarios] == [
        ("c3", ScenarioOutcome.UNEVALUABLE, AgentFailureSource.TIMEOUT),
        ("f", ScenarioOutcome.FAIL, AgentFailureSource.TIMEOUT),
    ]


def test_reports_show_what_each_category_scored_and_make_no_claim(profile: Profile) -> None:
    report = build_report(_run_with_one_unevaluable_capability(), profile, RUN)
    assert report.incomplete
    assert "makes no conformance claim" in report.statements["conformance"]
    assert [(u.scenario_id, u.cause) for u in report.unevaluated] == [("c3", "no answer within 600s")]
    detail = next(c for c in report.capability_categories if c.category == "diagnostic-accuracy")
    assert (detail.comparable, detail.scenarios_scored, detail.unevaluable) == (False, 2, 1)
    assert "C-DA-002" in detail.archetypes
    markdown = render_ci(report, "markdown", CiContext())
    assert "| diagnostic-accuracy | 0.68 | weighted\\_average | 2 | 1 | no |" in markdown
    html = render_html(report)
    assert "2 scored, 1 unevaluable (not comparable)" in html
    assert "<li>c3: no answer within 600s (timeout)</li>" in html
