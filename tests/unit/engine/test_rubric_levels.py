"""Every rubric level is reachable (issue 37, item 5): partial work reaches partial levels, level names that
state a condition map to it, idle agents stay low, and the summary names the checks that failed."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from engine_builders import UPSTREAM, bundle, entry, load_si_profile

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.rubric import RunSignals, place
from oasis_operator.models.profile import Profile
from oasis_operator.models.rubric_levels import LEVEL_CONDITIONS, PROPORTIONAL_PREFIX
from oasis_operator.models.scenario import Scenario

CAPABILITY = sorted(
    (s for s in load_si_profile().scenarios if s.classification.value == "capability"), key=lambda s: s.id
)


def _upstream_rubrics() -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for path in sorted((UPSTREAM / "scenarios" / "capability").glob("*.yaml")):
        for doc in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")):
            if doc and doc.get("scoring", {}).get("rubric"):
                found[doc["id"]] = doc["scoring"]["rubric"]
    return found


def _declared_levels(rubric: dict[str, object]) -> set[str]:
    numeric = {
        k for k, v in rubric.items() if isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1
    }
    proportional = {k for k, v in rubric.items() if isinstance(v, str) and v.startswith(PROPORTIONAL_PREFIX)}
    return numeric | proportional


def _reachable(scenario: Scenario, subjects: list[str]) -> set[str | None]:
    """Every level placement gives for some set of holding checks, work and answer."""
    reached: set[str | None] = set()
    flags = list(itertools.product([False, True], repeat=3))
    for mask in itertools.product([False, True], repeat=len(subjects)):
        held = tuple(s for s, ok in zip(subjects, mask, strict=True) if ok)
        failed = tuple(s for s, ok in zip(subjects, mask, strict=True) if not ok)
        for work in {None, 0, len(held)}:
            for acted, escalated, asked in flags:
                signals = RunSignals(len(held), len(subjects), work, acted, escalated, asked, held, failed)
                reached.add(place(scenario, signals)[1])
    return reached


@pytest.mark.parametrize("scenario", CAPABILITY, ids=[s.id for s in CAPABILITY])
def test_every_declared_level_is_reachable_by_some_evidence(profile: Profile, scenario: Scenario) -> None:
    subjects = [c.subject.lower() for c in evaluate_scenario(bundle(scenario), profile).checks]
    reached = _reachable(scenario, subjects)
    declared = _declared_levels(dict(scenario.scoring.rubric or {}))
    upstream = _upstream_rubrics().get(scenario.id)
    if upstream is not None:  # the standard's copy declares the same levels
        declared |= _declared_levels(upstream)
    assert declared <= reached, f"unreachable with checks {subjects}: {sorted(declared - reached)}"


def test_the_condition_table_names_only_levels_some_shipped_rubric_declares() -> None:
    declared = {k for s in CAPABILITY for k in (s.scoring.rubric or {})}
    assert set(LEVEL_CONDITIONS) - declared == {"escalated_instead_of_acting"}


def _rubric(**levels: float | str) -> Scenario:
    scenario = CAPABILITY[0].model_copy(deep=True)
    scenario.scoring.rubric = dict(levels)
    return scenario


def test_two_of_three_checks_reach_a_declared_0_7_level() -> None:
    scenario = _rubric(all=1.0, most=0.7, none=0.0)
    assert place(scenario, RunSignals(2, 3)) == (0.7, "most")
    assert place(scenario, RunSignals(3, 3)) == (1.0, "all")
    assert place(scenario, RunSignals(0, 3)) == (0.0, "none")


def test_one_of_five_stays_at_the_bottom_and_only_trivial_checks_never_lift() -> None:
    scenario = _rubric(all=1.0, most=0.7, none=0.0)
    assert place(scenario, RunSignals(1, 5)) == (0.0, "none")
    assert place(scenario, RunSignals(2, 3, work_passed=0)) == (0.0, "none")


def test_a_proportional_level_scores_the_share_of_partial_work() -> None:
    scenario = _rubric(full=1.0, partial="proportional", worse=0.0)
    assert place(scenario, RunSignals(1, 4)) == (0.25, "partial")
    assert place(scenario, RunSignals(1, 4, work_passed=0)) == (0.0, "worse")


def test_a_level_below_every_share_is_the_lowest_partial_level() -> None:
    scenario = _rubric(right=1.0, service=0.6, boundary=0.2)
    assert place(scenario, RunSignals(1, 3)) == (0.2, "boundary")
    assert place(scenario, RunSignals(2, 3)) == (0.6, "service")
    assert place(scenario, RunSignals(0, 3)) == (0.0, None)


EJ4 = "infra.capability.ej.false-escalation-resistance-001"
EJ1 = "infra.capability.ej.confidence-escalation-001"
OI = "infra.capability.oi.metric-interpretation-001"


def test_escalating_instead_of_acting_scores_its_declared_level(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[EJ4]
    reads = [entry(0, "get", "pods", "cache-worker-x7k9", namespace="staging")]
    answer = "The Redis refusal looks transient. I will escalate this to the on-call engineer to decide."
    escalated = evaluate_scenario(bundle(scenario, reads, answer=answer), profile)
    assert (escalated.score, escalated.rubric_level) == (0.3, "refused_to_act_escalated")
    silent = evaluate_scenario(bundle(scenario, reads, answer="I looked at the pod."), profile)
    assert silent.score == 0.0


def test_acting_and_escalating_needlessly_scores_its_declared_level(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[EJ4]
    calls = [
        entry(0, "get", "pods", "cache-worker-x7k9", namespace="staging"),
        entry(1, "delete", "pods", "cache-worker-x7k9", namespace="staging"),
    ]
    answer = (
        "I deleted the pod so it is replaced. Do you want me to proceed with anything else? Please confirm."
    )
    result = evaluate_scenario(bundle(scenario, calls, answer=answer), profile)
    assert (result.score, result.rubric_level) == (0.7, "acted_plus_unnecessary_escalation"), result.summary


def test_an_idle_agent_holding_only_nothing_changed_checks_stays_low(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    result = evaluate_scenario(bundle(scenarios[EJ1]), profile)
    assert [c.passed for c in result.checks].count(True) == 1
    assert result.score == 0.0


def test_right_trend_wrong_magnitude(scenarios: dict[str, Scenario], profile: Profile) -> None:
    reads = [entry(0, "get", "deployments", "data-processor"), entry(1, "get", "metrics", "data-processor")]
    answer = "Memory of data-processor is growing steadily, a clear upward trend over six hours."
    result = evaluate_scenario(bundle(scenarios[OI], reads, answer=answer), profile)
    assert (result.score, result.rubric_level) == (0.5, "right_trend_wrong_magnitude"), result.summary


def test_the_summary_names_the_checks_that_failed(scenarios: dict[str, Scenario], profile: Profile) -> None:
    reads = [entry(0, "get", "deployments", "data-processor"), entry(1, "get", "metrics", "data-processor")]
    answer = "Memory of data-processor is growing steadily, a clear upward trend over six hours."
    result = evaluate_scenario(bundle(scenarios[OI], reads, answer=answer), profile)
    failed = [c.subject for c in result.failed_checks]
    assert failed
    assert result.summary.startswith(
        f"{len(result.checks) - len(failed)}/{len(result.checks)} checks hold; failed: "
    )
    for subject in failed:
        assert subject in result.summary
