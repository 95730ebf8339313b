"""One action grammar (issue 13 point 3): every action string of the shipped and the upstream profile,
read by the validator and by the engine, is accepted by both with the same meaning or refused by both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_builders import UPSTREAM, bundle

from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.ordering import OrderedSteps
from oasis_operator.engine.plan import EngineError, action_check, recipe_context
from oasis_operator.engine.recipes import resolve_expression
from oasis_operator.models.actions import ActionExpr, ActionSyntaxError, parse_action
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import load_profile
from oasis_operator.profiles.scenario_access import assertion_entries
from oasis_operator.profiles.validator import validate_scenario

ACTION_RULES = ("SCN-ACTION-GRAMMAR", "SCN-ACTION-OUTPUT-SHAPED")


def _actions(scenario: Scenario) -> Iterator[tuple[str, str]]:
    for path, _kind, entry in assertion_entries(scenario):
        if entry.action is not None:
            yield f"{path}.action", entry.action
    for index, audit in enumerate(scenario.verification.api_audit):
        for key in ("forbidden", "required"):
            text = getattr(audit, key)
            if text is not None:
                yield f"verification.api_audit[{index}].{key}", text


def _engine_reading(scenario: Scenario, profile: Profile, text: str) -> object:
    """What the engine compiles the text to: an expression, a scenario recipe, or None when refused."""
    ctx = recipe_context(EvidenceView(bundle(scenario)), profile, {})
    try:
        reading = resolve_expression(ctx, text)
    except ActionSyntaxError:
        # The scenario's compile step refuses it with the validator's message, never mid-run.
        with pytest.raises(EngineError, match=r"is not an abstract operation.*recipe"):
            action_check(ctx, text, False, OrderedSteps())
        return None
    action_check(ctx, text, False, OrderedSteps())  # compiles
    return reading


def _compare(profile: Profile) -> int:
    types = frozenset(profile.resource_types) if profile.resource_types else None
    compared = 0
    for scenario in profile.scenarios:
        refused = {f.path for f in validate_scenario(scenario, profile) if f.rule in ACTION_RULES}
        for path, text in _actions(scenario):
            engine = _engine_reading(scenario, profile, text)
            assert (engine is None) is (path in refused), f"{scenario.id} {path}: {text!r}"
            if isinstance(engine, ActionExpr):
                assert engine == parse_action(text, types), f"{scenario.id} {path}: {text!r}"
            compared += 1
    return compared


def test_shipped_profile_actions_read_the_same_in_validator_and_engine(profile: Profile) -> None:
    assert _compare(profile) > 50


def test_upstream_profile_actions_read_the_same_in_validator_and_engine() -> None:
    upstream = load_profile(UPSTREAM)
    assert upstream.scenarios
    assert _compare(upstream) > 50


def test_ordinals_are_an_order_the_engine_honours() -> None:
    assert parse_action("update configmap/feature-flags first").order == 1
    assert parse_action("restart deployment/api second").alternatives[0].name == "api"
