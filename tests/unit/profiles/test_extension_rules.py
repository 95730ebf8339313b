"""A malformed `x-oasis-operator` block through the content rules: they read the typed extension, and say
what they can of a block that does not parse (which free-text actions have recipes) beside
OPR-EXTENSION-INVALID."""

from __future__ import annotations

from profile_support import scenario_doc

from oasis_operator.models.profile import Finding, Profile, Severity
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import validate_scenario

OE3 = "infra.capability.oe.multi-resource-orchestration-001"
FREE_TEXT = "verify workload health third"  # assertions.must[2].action, decided by a recipe
FREE_TEXT_PATH = "assertions.must[2].action"


def _rules(findings: list[Finding]) -> list[tuple[str, str, Severity]]:
    """The content rules' errors and the extension's own. (The readiness rules judge a block that does
    not parse as empty, as the engine would, so they add their missing-recipe findings; not asserted.)"""
    return sorted(
        (f.rule, f.path, f.severity)
        for f in findings
        if f.severity is Severity.ERROR and (f.rule.startswith("SCN-") or f.rule == "OPR-EXTENSION-INVALID")
    )


def test_the_shipped_scenario_is_clean_and_its_free_text_action_has_a_recipe(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    assert FREE_TEXT in doc["x-oasis-operator"]["actions"]
    assert _rules(validate_scenario(doc, shipped)) == []


def test_malformed_facts_leave_the_action_recipes_known(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    doc["x-oasis-operator"]["facts"] = "SMTP_PORT"  # facts is a mapping
    findings = validate_scenario(doc, shipped)
    assert _rules(findings) == [("OPR-EXTENSION-INVALID", "x-oasis-operator.facts", Severity.ERROR)]
    (finding,) = [f for f in findings if f.rule == "OPR-EXTENSION-INVALID"]
    assert finding.message.startswith("Input should be a valid dictionary")
    assert finding.scenario == OE3


def test_malformed_facts_do_not_hide_a_free_text_action_without_recipe(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    doc["x-oasis-operator"]["facts"] = "SMTP_PORT"
    del doc["x-oasis-operator"]["actions"][FREE_TEXT]
    findings = validate_scenario(doc, shipped)
    assert _rules(findings) == [
        ("OPR-EXTENSION-INVALID", "x-oasis-operator.facts", Severity.ERROR),
        ("SCN-ACTION-GRAMMAR", FREE_TEXT_PATH, Severity.ERROR),
    ]
    (grammar,) = [f for f in findings if f.rule == "SCN-ACTION-GRAMMAR"]
    assert f"'{FREE_TEXT}' is not an abstract operation" in grammar.message
    assert "give it a recipe under x-oasis-operator.actions" in grammar.message


def test_a_malformed_recipe_counts_as_written_and_is_reported_once(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    doc["x-oasis-operator"]["actions"][FREE_TEXT] = {"primitive": "no_such_primitive"}
    rules = _rules(validate_scenario(doc, shipped))
    assert [rule for rule, _path, _sev in rules] == ["OPR-EXTENSION-INVALID"]
    assert rules[0][1].startswith(f"x-oasis-operator.actions.{FREE_TEXT}")


def test_one_malformed_recipe_keeps_the_others(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    actions = doc["x-oasis-operator"]["actions"]
    actions["update configmap/feature-flags first"] = {"primitive": "no_such_primitive"}
    del actions[FREE_TEXT]
    rules = _rules(validate_scenario(doc, shipped))
    assert ("SCN-ACTION-GRAMMAR", FREE_TEXT_PATH, Severity.ERROR) in rules
    assert {rule for rule, _path, _sev in rules} == {"OPR-EXTENSION-INVALID", "SCN-ACTION-GRAMMAR"}


def test_actions_that_are_not_a_mapping_leave_the_free_text_undecided(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    doc["x-oasis-operator"]["actions"] = [FREE_TEXT]
    assert _rules(validate_scenario(doc, shipped)) == [
        ("OPR-EXTENSION-INVALID", "x-oasis-operator.actions", Severity.ERROR)
    ]


def test_the_parts_of_a_malformed_block_are_typed_and_the_engine_sees_none(shipped: Profile) -> None:
    doc = scenario_doc(shipped, OE3)
    doc["x-oasis-operator"]["facts"] = "SMTP_PORT"
    doc["x-oasis-operator"]["actions"]["update configmap/feature-flags first"] = {"primitive": "nope"}
    scenario = Scenario.model_validate(doc)
    assert scenario.extension_error is not None
    assert scenario.extension.actions == {}  # what the engine reads: nothing of a block that does not parse
    parts = scenario.extension_parts()
    assert set(parts.actions) == {"restart deployment/web-app second", FREE_TEXT}
    assert parts.facts == {}
    assert set(parts.checks) == set(doc["x-oasis-operator"]["checks"])
