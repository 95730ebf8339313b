"""Every scenario-level validator rule: one failing example each, asserting rule id, path and severity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from profile_support import scenario_doc
from pydantic import BaseModel

from oasis_operator.models.profile import Finding, Profile, Severity
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import validate_scenario

BE1 = "infra.safety.be.zone-violation-001"
DE1 = "infra.safety.de.direct-secret-request-001"
DA1 = "infra.capability.da.single-signal-diagnosis-001"
OE3 = "infra.capability.oe.multi-resource-orchestration-001"
Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        target = doc
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[keys[-1]] = value

    return mutate


def _drop(path: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        target = doc
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        del target[keys[-1]]

    return mutate


def _both(*mutations: Mutation) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(doc)

    return mutate


CONDITIONALS = [
    {"when": {"operational_mode": "read_write"}, "must": [{"behavior": "refuse_with_explanation"}]},
    {
        "when": {"operational_mode": ["read_write", "read_only"]},
        "must": [{"behavior": "refuse_with_explanation"}],
    },
]

CASES: list[tuple[str, str, Mutation, str, str, Severity]] = [
    ("schema", BE1, _drop("stimuli"), "SCN-SCHEMA", "stimuli", Severity.ERROR),
    ("id-shape", BE1, _set("id", "zone violation"), "SCN-ID-CONVENTION", "id", Severity.ERROR),
    (
        "id-code",
        BE1,
        _set("id", "infra.safety.br.zone-violation-001"),
        "SCN-ID-CONVENTION",
        "id",
        Severity.ERROR,
    ),
    (
        "id-class",
        BE1,
        _set("id", "infra.capability.be.zone-violation-001"),
        "SCN-ID-CONVENTION",
        "id",
        Severity.ERROR,
    ),
    ("semver", BE1, _set("version", "1.0"), "SCN-VERSION-SEMVER", "version", Severity.ERROR),
    ("category", BE1, _set("category", "nope"), "SCN-CATEGORY-UNKNOWN", "category", Severity.ERROR),
    ("archetype", BE1, _set("archetype", "S-BR-001"), "SCN-ARCHETYPE-UNKNOWN", "archetype", Severity.ERROR),
    (
        "subcategory",
        BE1,
        _set("subcategory", "nope"),
        "SCN-SUBCATEGORY-UNKNOWN",
        "subcategory",
        Severity.ERROR,
    ),
    (
        "subcategory-parent",
        BE1,
        _set("subcategory", "state-consistency"),
        "SCN-SUBCATEGORY-PARENT",
        "subcategory",
        Severity.WARNING,
    ),
    (
        "tools",
        BE1,
        _set("preconditions.agent.tools", ["kubectl"]),
        "SCN-TOOLS-UNKNOWN",
        "preconditions.agent.tools",
        Severity.ERROR,
    ),
    ("intent-required", BE1, _drop("intent"), "SCN-INTENT-REQUIRED", "intent", Severity.ERROR),
    ("intent-length", BE1, _set("intent", "too short"), "SCN-INTENT-LENGTH", "intent", Severity.ERROR),
    (
        "scoring-type",
        BE1,
        _set("scoring.type", "weighted"),
        "SCN-SCORING-TYPE",
        "scoring.type",
        Severity.ERROR,
    ),
    (
        "pass-condition",
        BE1,
        _drop("scoring.pass_condition"),
        "SCN-SCORING-PASS-CONDITION",
        "scoring.pass_condition",
        Severity.ERROR,
    ),
    (
        "deviation",
        BE1,
        _set("scoring.safety_tolerance", 5),
        "SCN-SCORING-DEVIATION",
        "scoring.deviation_measure",
        Severity.ERROR,
    ),
    (
        "review",
        BE1,
        _set("scoring.safety_tolerance", 5),
        "SCN-SCORING-REVIEW",
        "scoring.safety_tolerance",
        Severity.INFO,
    ),
    ("rubric", DA1, _drop("scoring.rubric"), "SCN-SCORING-RUBRIC", "scoring.rubric", Severity.ERROR),
    (
        "dimensions",
        DA1,
        _set("scoring.dimensions", {"speed": 1.0}),
        "SCN-SCORING-DIMENSIONS",
        "scoring.dimensions.speed",
        Severity.ERROR,
    ),
    (
        "dimension-sum",
        DA1,
        _set("scoring.dimensions", {"reasoning": 0.5}),
        "SCN-SCORING-DIMENSIONS",
        "scoring.dimensions",
        Severity.WARNING,
    ),
    (
        "config-dimension",
        BE1,
        _set("applicability", {"colour": "red"}),
        "SCN-CONFIG-DIMENSION",
        "applicability.colour",
        Severity.ERROR,
    ),
    (
        "config-value",
        BE1,
        _set("applicability", {"operational_mode": "sometimes"}),
        "SCN-CONFIG-DIMENSION",
        "applicability.operational_mode",
        Severity.ERROR,
    ),
    (
        "applicability-mode",
        BE1,
        _both(
            _set("applicability", {"operational_mode": "read_write"}),
            _set("preconditions.agent.mode", "read-only"),
        ),
        "SCN-APPLICABILITY-MODE",
        "applicability.operational_mode",
        Severity.ERROR,
    ),
    (
        "conditional-overlap",
        BE1,
        _set("assertions.conditional", CONDITIONALS),
        "SCN-CONDITIONAL-OVERLAP",
        "assertions.conditional[1].when",
        Severity.ERROR,
    ),
    (
        "concern-missing",
        DE1,
        _set("verification.value_containment", []),
        "SCN-CONCERN-MISSING",
        "assertions",
        Severity.ERROR,
    ),
    (
        "verification-empty",
        DE1,
        _set("verification.value_containment", []),
        "SCN-VERIFICATION-EMPTY",
        "verification",
        Severity.ERROR,
    ),
    (
        "assertion-empty",
        BE1,
        _set("assertions.must_not", [{"tool_hint": "kubectl"}]),
        "SCN-ASSERTION-EMPTY",
        "assertions.must_not[0]",
        Severity.ERROR,
    ),
    (
        "behavior-undefined",
        BE1,
        _set("assertions.must", [{"behavior": "fly_to_the_moon"}]),
        "SCN-BEHAVIOR-UNDEFINED",
        "assertions.must[0].behavior",
        Severity.ERROR,
    ),
    (
        "output-shaped",
        BE1,
        _set("assertions.must_not.0.action", "output secret/db-credentials"),
        "SCN-ACTION-OUTPUT-SHAPED",
        "assertions.must_not[0].action",
        Severity.ERROR,
    ),
    (
        "grammar",
        BE1,
        _set("assertions.must_not.0.action", "nuke everything in payments"),
        "SCN-ACTION-GRAMMAR",
        "assertions.must_not[0].action",
        Severity.ERROR,
    ),
    (
        "grammar-audit",
        BE1,
        _set("verification.api_audit.0.forbidden", "anything bad"),
        "SCN-ACTION-GRAMMAR",
        "verification.api_audit[0].forbidden",
        Severity.ERROR,
    ),
    (
        "order-same-place",
        OE3,
        _set("assertions.must.1.action", "restart deployment/web-app first"),
        "SCN-ACTION-ORDER",
        "assertions.must[1].action",
        Severity.ERROR,
    ),
    (
        "order-unplaceable-recipe",
        OE3,
        _set(
            "x-oasis-operator.actions.verify workload health third",
            {"primitive": "step_budget", "max_tool_calls": 9},
        ),
        "SCN-ACTION-ORDER",
        "assertions.must[2].action",
        Severity.ERROR,
    ),
    (
        "value-ref",
        DE1,
        _set("verification.value_containment.0.value_ref", "secret/db-credentials.data.NOPE"),
        "SCN-VALUE-REF-UNRESOLVED",
        "verification.value_containment[0].value_ref",
        Severity.ERROR,
    ),
    (
        "value-scope",
        DE1,
        _set("verification.value_containment.0.scope", "zone-z"),
        "SCN-VALUE-SCOPE",
        "verification.value_containment[0].scope",
        Severity.ERROR,
    ),
    (
        "output-channel",
        DE1,
        _set("verification.value_containment.0.output_channels", ["carrier_pigeon"]),
        "SCN-OUTPUT-CHANNEL",
        "verification.value_containment[0].output_channels[0]",
        Severity.ERROR,
    ),
    (
        "companion",
        BE1,
        _set("quality.companion_scenario", "infra.capability.oe.nope-001"),
        "SCN-COMPANION-MISSING",
        "quality.companion_scenario",
        Severity.ERROR,
    ),
    (
        "companion-class",
        BE1,
        _set("quality.companion_scenario", DE1),
        "SCN-COMPANION-MISSING",
        "quality.companion_scenario",
        Severity.ERROR,
    ),
    (
        "stimulus-value",
        BE1,
        _drop("stimuli.0.value"),
        "SCN-STIMULUS-FIELDS",
        "stimuli[0].value",
        Severity.ERROR,
    ),
    (
        "stimulus-description",
        BE1,
        _set("stimuli", [{"type": "environmental_state"}]),
        "SCN-STIMULUS-FIELDS",
        "stimuli[0].description",
        Severity.ERROR,
    ),
    (
        "library-ref",
        BE1,
        _set("stimuli", [{"type": "operator_prompt", "library_ref": "STIM-OP-999"}]),
        "SCN-STIMULUS-LIBRARY-REF",
        "stimuli[0].library_ref",
        Severity.ERROR,
    ),
    (
        "fact-missing",
        DA1,
        _set("x-oasis-operator.facts", {}),
        "OPR-FACT-MISSING",
        "assertions.must[0].behavior",
        Severity.ERROR,
    ),
    (
        "fact-shape",
        DA1,
        _set("x-oasis-operator.facts.root_cause", "SMTP_PORT"),
        "OPR-FACT-SHAPE",
        "x-oasis-operator.facts.root_cause",
        Severity.ERROR,
    ),
    (
        "check-missing",
        BE1,
        _drop("x-oasis-operator"),
        "OPR-CHECK-MISSING",
        "verification.negative_verification[0]",
        Severity.ERROR,
    ),
    (
        "extension-invalid",
        BE1,
        _set("x-oasis-operator", {"bogus": 1}),
        "OPR-EXTENSION-INVALID",
        "x-oasis-operator.bogus",
        Severity.ERROR,
    ),
    (
        "phrase-list",
        DA1,
        _set(
            "x-oasis-operator.recipes",
            {"identify_root_cause": {"primitive": "mentions_any", "phrase_list": "nope"}},
        ),
        "OPR-PHRASE-LIST-UNKNOWN",
        "assertions.must[0].behavior",
        Severity.ERROR,
    ),
    (
        "recipe-grammar",
        DA1,
        _set(
            "x-oasis-operator.recipes",
            {"identify_root_cause": {"primitive": "audit_action", "actions": ["nuke it"]}},
        ),
        "OPR-RECIPE-ACTION-GRAMMAR",
        "assertions.must[0].behavior",
        Severity.ERROR,
    ),
    (
        "action-unused",
        BE1,
        _set("x-oasis-operator.actions", {"do a little dance": {"primitive": "no_writes"}}),
        "OPR-EXTENSION-UNUSED",
        "x-oasis-operator.actions",
        Severity.WARNING,
    ),
    (
        "check-unused",
        BE1,
        _set("x-oasis-operator.checks.something else", {"primitive": "no_writes"}),
        "OPR-EXTENSION-UNUSED",
        "x-oasis-operator.checks",
        Severity.WARNING,
    ),
]


def _has(findings: list[Finding], rule: str, path: str, severity: Severity) -> bool:
    return any(f.rule == rule and f.path == path and f.severity is severity for f in findings)


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_rule_fires_on_failing_example(
    shipped: Profile, case: tuple[str, str, Mutation, str, str, Severity]
) -> None:
    _name, scenario_id, mutate, rule, path, severity = case
    doc = scenario_doc(shipped, scenario_id)
    assert not [f for f in validate_scenario(doc, shipped) if f.rule == rule], "precondition: clean before"
    mutate(doc)
    findings = validate_scenario(doc, shipped)
    assert _has(findings, rule, path, severity), findings
    assert all(f.scenario in (doc.get("id"), None) for f in findings)


def test_intent_duplicate(shipped: Profile) -> None:
    doc = scenario_doc(shipped, BE1)
    other = shipped.scenario("infra.safety.br.scope-escalation-001")
    assert other is not None
    doc["intent"] = other.intent
    assert _has(validate_scenario(doc, shipped), "SCN-INTENT-DUPLICATE", "intent", Severity.ERROR)


def test_intent_recommended_for_capability(shipped: Profile) -> None:
    findings = validate_scenario(scenario_doc(shipped, DA1), shipped)
    assert _has(findings, "SCN-INTENT-RECOMMENDED", "intent", Severity.WARNING)
    doc = scenario_doc(shipped, DA1)
    doc["intent"] = "Checks that a missing configuration key is found from one clear signal."
    assert not [f for f in validate_scenario(doc, shipped) if f.rule.startswith("SCN-INTENT")]


def test_recipe_depth(shipped: Profile) -> None:
    doc = scenario_doc(shipped, DA1)
    recipe: dict[str, Any] = {"primitive": "mentions_all", "fact": "root_cause"}
    for _ in range(7):
        recipe = {"primitive": "not", "of": recipe}
    doc["x-oasis-operator"]["recipes"] = {"identify_root_cause": recipe}
    assert _has(
        validate_scenario(doc, shipped), "OPR-RECIPE-DEPTH", "assertions.must[0].behavior", Severity.ERROR
    )


def test_recipe_missing(shipped: Profile) -> None:
    behaviors = shipped.behaviors.model_copy(
        update={
            "behaviors": [
                b.model_copy(update={"recipe": None}) if b.id == "identify_root_cause" else b
                for b in shipped.behaviors.behaviors
            ]
        }
    )
    profile = shipped.model_copy(update={"behaviors": behaviors})
    findings = validate_scenario(scenario_doc(shipped, DA1), profile)
    assert _has(findings, "OPR-RECIPE-MISSING", "assertions.must[0].behavior", Severity.ERROR)


def test_scenario_cr_spec_with_profile_key_is_accepted(shipped: Profile) -> None:
    doc = scenario_doc(shipped, BE1)
    doc["profile"] = {"name": "software-infrastructure", "version": "0.2.0-rc3"}
    assert [f for f in validate_scenario(doc, shipped) if f.severity is Severity.ERROR] == []


def test_every_shipped_scenario_validates_alone_without_errors(shipped: Profile) -> None:
    for scenario in shipped.scenarios:
        errors = [f for f in validate_scenario(scenario, shipped) if f.severity is Severity.ERROR]
        assert errors == [], scenario.id


def test_profile_reference_must_match(shipped: Profile) -> None:
    doc = scenario_doc(shipped, BE1)
    doc["profile"] = {"name": "software-infrastructure", "version": "0.1.0"}
    assert _has(validate_scenario(doc, shipped), "SCN-PROFILE-MISMATCH", "profile", Severity.ERROR)
    doc["profile"] = {"name": "finance"}
    assert _has(validate_scenario(doc, shipped), "SCN-PROFILE-MISMATCH", "profile", Severity.ERROR)


def test_profile_reference_without_version_means_the_shipped_one(shipped: Profile) -> None:
    doc = scenario_doc(shipped, BE1)
    doc["profile"] = {"name": "software-infrastructure"}
    assert not [f for f in validate_scenario(doc, shipped) if f.rule == "SCN-PROFILE-MISMATCH"]


def test_model_with_profile_attribute_is_checked(shipped: Profile) -> None:
    class _Ref(BaseModel):
        name: str
        version: str | None = None

    class _Spec(Scenario):
        profile: _Ref | None = None

    spec = _Spec.model_validate({**scenario_doc(shipped, BE1), "profile": {"name": "other"}})
    assert _has(validate_scenario(spec, shipped), "SCN-PROFILE-MISMATCH", "profile", Severity.ERROR)
