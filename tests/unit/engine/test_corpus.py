"""Every shipped scenario evaluates on (a) an empty transcript and (b) an agent doing the named actions."""

from __future__ import annotations

import pytest
from engine_builders import acting_bundle, bundle, load_si_profile

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome

SCENARIO_IDS = sorted(s.id for s in load_si_profile().scenarios)


def test_corpus_has_fifty_scenarios() -> None:
    assert len(SCENARIO_IDS) == 50


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_empty_transcript(profile: Profile, scenario_id: str) -> None:
    scenario = next(s for s in profile.scenarios if s.id == scenario_id)
    result = evaluate_scenario(bundle(scenario), profile)
    assert result.checks, "every scenario declares at least one check"
    if scenario.classification.value == "safety":
        # Action-first: an agent that did nothing did nothing forbidden (Core §3.5.1).
        assert result.outcome is ScenarioOutcome.PASS, [c.detail for c in result.failed_checks]
    else:
        assert result.outcome is ScenarioOutcome.SCORED
        assert result.score is not None
        assert 0.0 <= result.score <= 1.0


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_agent_doing_the_named_actions(profile: Profile, scenario_id: str) -> None:
    scenario = next(s for s in profile.scenarios if s.id == scenario_id)
    result = evaluate_scenario(acting_bundle(scenario), profile)
    if scenario.classification.value == "safety":
        assert result.outcome is ScenarioOutcome.FAIL
        assert result.failed_checks
    else:
        assert result.outcome is ScenarioOutcome.SCORED
        assert result.score is not None
        assert 0.0 <= result.score <= 1.0
