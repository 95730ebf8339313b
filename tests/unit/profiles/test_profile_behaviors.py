"""The behaviour registry: coverage of every referenced behaviour and the recipe models."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from oasis_operator.models.actions import parse_action
from oasis_operator.models.behaviors import BehaviorKind
from oasis_operator.models.profile import Profile
from oasis_operator.models.recipes import (
    MAX_RECIPE_DEPTH,
    AllOf,
    AuditAction,
    MentionsAny,
    Recipe,
    action_expressions,
    facts_used,
    phrase_lists_used,
    recipe_depth,
)
from oasis_operator.profiles.readiness import parse_extension
from oasis_operator.profiles.scenario_rules import assertion_entries

RECIPE = TypeAdapter(Recipe)


def test_every_referenced_behaviour_has_a_registry_entry_with_a_recipe(shipped: Profile) -> None:
    referenced = {e.behavior for s in shipped.scenarios for _p, _k, e in assertion_entries(s) if e.behavior}
    assert len(referenced) == 54
    for behavior_id in sorted(referenced):
        behavior = shipped.behaviors.get(behavior_id)
        assert behavior is not None, behavior_id
        assert behavior.recipe is not None, behavior_id


def test_registry_covers_every_upstream_behaviour(shipped: Profile, upstream: Profile) -> None:
    assert upstream.behaviors.ids() == shipped.behaviors.ids()
    assert all(behavior.recipe is not None for behavior in shipped.behaviors.behaviors)


def test_detection_and_action_kinds_follow_core_examples(shipped: Profile) -> None:
    kinds = {b.id: b.kind for b in shipped.behaviors.behaviors}
    for action_id in ("refuse_with_explanation", "halt_or_rollback", "preserve_unmentioned_keys"):
        assert kinds[action_id] is BehaviorKind.ACTION
    for detection_id in (
        "identify_zone_boundary",
        "detect_zone_crossing",
        "detect_composite_unauthorized_outcome",
    ):
        assert kinds[detection_id] is BehaviorKind.DETECTION


def test_same_as_points_at_an_existing_behaviour(shipped: Profile) -> None:
    ids = shipped.behaviors.ids()
    aliases = [b for b in shipped.behaviors.behaviors if b.same_as]
    assert {b.id for b in aliases} >= {"diagnose_correctly", "surface_escalation_path"}
    assert all(b.same_as in ids for b in aliases)


def test_every_expression_and_phrase_list_in_the_registry_resolves(shipped: Profile) -> None:
    types = frozenset(shipped.resource_types)
    for behavior in shipped.behaviors.behaviors:
        assert behavior.recipe is not None
        for text in action_expressions(behavior.recipe):
            parse_action(text, types)
        assert phrase_lists_used(behavior.recipe) <= set(shipped.behaviors.phrase_lists), behavior.id


def test_every_scenario_extension_parses(shipped: Profile) -> None:
    for scenario in shipped.scenarios:
        _extension, findings = parse_extension(scenario)
        assert findings == [], scenario.id


def test_single_signal_ground_truth_names_the_missing_key(shipped: Profile) -> None:
    scenario = shipped.scenario("infra.capability.da.single-signal-diagnosis-001")
    assert scenario is not None
    extension, _ = parse_extension(scenario)
    assert extension.facts["root_cause"] == ["SMTP_PORT", "smtp-config"]
    behavior = shipped.behaviors.get("identify_root_cause")
    assert behavior is not None
    assert behavior.recipe is not None
    assert facts_used(behavior.recipe) == {"root_cause"}


def test_audit_action_needs_a_source() -> None:
    with pytest.raises(ValidationError, match="needs actions, actions_fact or scenario_actions"):
        RECIPE.validate_python({"primitive": "audit_action"})


def test_audit_action_bounds_must_be_ordered() -> None:
    with pytest.raises(ValidationError, match="max_count is smaller than min_count"):
        RECIPE.validate_python(
            {"primitive": "audit_action", "actions": ["get pod/*"], "min_count": 2, "max_count": 1}
        )


def test_unknown_primitive_is_rejected() -> None:
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        RECIPE.validate_python({"primitive": "ask_an_llm"})


def test_unknown_argument_is_rejected() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        RECIPE.validate_python({"primitive": "step_budget", "max_tool_calls": 3, "typo": 1})


def test_combinators_parse_and_report_depth_and_facts() -> None:
    recipe = RECIPE.validate_python(
        {
            "primitive": "all_of",
            "of": [
                {"primitive": "mentions_all", "fact": "root_cause"},
                {
                    "primitive": "not",
                    "of": {"primitive": "audit_action", "actions_fact": "bad", "min_count": 1},
                },
            ],
        }
    )
    assert isinstance(recipe, AllOf)
    assert recipe_depth(recipe) == 3
    assert facts_used(recipe) == {"root_cause", "bad"}
    assert recipe_depth(AuditAction(actions=["get pod/*"])) == 1
    assert MAX_RECIPE_DEPTH == 6
    assert phrase_lists_used(MentionsAny(phrase_list="refusal")) == {"refusal"}
