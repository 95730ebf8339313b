"""Profile-level validator rules and the whole-profile results."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from oasis_operator.models.behaviors import Behavior, BehaviorKind
from oasis_operator.models.profile import Finding, Profile, Severity
from oasis_operator.profiles import validate_profile

Change = Callable[[Profile], Profile]


def _first_safety(profile: Profile, **update: object) -> Profile:
    categories = [profile.safety_categories[0].model_copy(update=update), *profile.safety_categories[1:]]
    return profile.model_copy(update={"safety_categories": categories})


def _capability(profile: Profile, index: int, **update: object) -> Profile:
    categories = list(profile.capability_categories)
    categories[index] = categories[index].model_copy(update=update)
    return profile.model_copy(update={"capability_categories": categories})


def _behaviors(profile: Profile, behaviors: list[Behavior]) -> Profile:
    return profile.model_copy(
        update={"behaviors": profile.behaviors.model_copy(update={"behaviors": behaviors})}
    )


def _extra_behavior(profile: Profile, behavior: Behavior) -> Profile:
    return _behaviors(profile, [*profile.behaviors.behaviors, behavior])


UNUSED = Behavior(
    id="hum_a_tune", kind=BehaviorKind.DETECTION, group="x", description="Not used by any scenario."
)

CASES: list[tuple[str, Change, str, str, Severity]] = [
    (
        "core-safety",
        lambda p: _first_safety(p, core_mapping=["declared-mode-verification"]),
        "PRF-CORE-SAFETY-COVERAGE",
        "safety_categories",
        Severity.ERROR,
    ),
    (
        "justification",
        lambda p: _first_safety(p, core_mapping=[], justification=None),
        "PRF-DOMAIN-JUSTIFICATION",
        "safety_categories[0].justification",
        Severity.ERROR,
    ),
    (
        "core-dimension",
        lambda p: p.model_copy(
            update={
                "capability_categories": [
                    c.model_copy(
                        update={
                            "dimensions": [d for d in c.dimensions if d != "auditability"] or ["reasoning"]
                        }
                    )
                    for c in p.capability_categories
                ]
            }
        ),
        "PRF-CORE-DIMENSION-COVERAGE",
        "capability_categories",
        Severity.ERROR,
    ),
    (
        "archetype-code",
        lambda p: _first_safety(p, code="zz"),
        "PRF-ARCHETYPE-CODE",
        "boundary-enforcement.archetypes[0].id",
        Severity.ERROR,
    ),
    (
        "aggregation-weights",
        lambda p: _capability(
            p,
            0,
            aggregation=p.capability_categories[0].aggregation.model_copy(
                update={"weights": {"C-XX-001": 2.0}}
            ),
        ),
        "PRF-AGGREGATION-WEIGHTS",
        "diagnostic-accuracy.aggregation.weights.C-XX-001",
        Severity.ERROR,
    ),
    (
        "dimension-weights-category",
        lambda p: p.model_copy(update={"core_dimension_weights": {"reasoning": {"nope": 1.0}}}),
        "PRF-DIMENSION-WEIGHTS",
        "core_dimension_weights.reasoning.nope",
        Severity.ERROR,
    ),
    (
        "dimension-weights-sum",
        lambda p: p.model_copy(
            update={"core_dimension_weights": {"reasoning": {"contextual-awareness": 0.5}}}
        ),
        "PRF-DIMENSION-WEIGHTS",
        "core_dimension_weights.reasoning",
        Severity.WARNING,
    ),
    (
        "subcategory-parent",
        lambda p: p.model_copy(
            update={
                "subcategories": [
                    p.subcategories[0].model_copy(update={"parents": ["nope"]}),
                    *p.subcategories[1:],
                ]
            }
        ),
        "PRF-SUBCATEGORY-PARENT",
        "subcategories[0].parents",
        Severity.ERROR,
    ),
    (
        "agent-config-empty",
        lambda p: p.model_copy(update={"agent_configuration": []}),
        "PRF-AGENT-CONFIG",
        "agent_configuration",
        Severity.ERROR,
    ),
    (
        "agent-config-enum",
        lambda p: p.model_copy(
            update={
                "agent_configuration": [
                    p.agent_configuration[0].model_copy(update={"values": ["read_write"]})
                ]
            }
        ),
        "PRF-AGENT-CONFIG",
        "agent_configuration[0].values",
        Severity.ERROR,
    ),
    (
        "agent-config-duplicate",
        lambda p: p.model_copy(update={"agent_configuration": [p.agent_configuration[0]] * 2}),
        "PRF-AGENT-CONFIG",
        "agent_configuration[1]",
        Severity.ERROR,
    ),
    (
        "conformance-missing",
        lambda p: p.model_copy(update={"conformance": None}),
        "PRF-CONFORMANCE",
        "conformance",
        Severity.ERROR,
    ),
    (
        "conformance-key",
        lambda p: p.model_copy(
            update={
                "conformance": p.conformance.model_copy(
                    update={
                        "requirements": {
                            k: v
                            for k, v in p.conformance.requirements.items()
                            if k != "value_containment_support"
                        }
                    }
                )
                if p.conformance
                else None
            }
        ),
        "PRF-CONFORMANCE",
        "conformance.requirements.value_containment_support",
        Severity.ERROR,
    ),
    (
        "behavior-duplicate",
        lambda p: _extra_behavior(p, p.behaviors.behaviors[0]),
        "PRF-BEHAVIOR-DUPLICATE",
        "behaviors[0]",
        Severity.ERROR,
    ),
    (
        "behavior-same-as",
        lambda p: _extra_behavior(p, UNUSED.model_copy(update={"same_as": "nope"})),
        "PRF-BEHAVIOR-SAME-AS",
        f"behaviors[{107}].same_as",
        Severity.ERROR,
    ),
    (
        "behavior-recipe",
        lambda p: _extra_behavior(p, UNUSED),
        "PRF-BEHAVIOR-RECIPE",
        f"behaviors[{107}].recipe",
        Severity.WARNING,
    ),
    (
        "id-duplicate",
        lambda p: p.model_copy(update={"scenarios": [*p.scenarios, p.scenarios[0]]}),
        "SCN-ID-DUPLICATE",
        "id",
        Severity.ERROR,
    ),
    (
        "archetype-coverage",
        lambda p: p.model_copy(update={"scenarios": [s for s in p.scenarios if s.archetype != "C-AU-005"]}),
        "PRF-ARCHETYPE-COVERAGE",
        "auditability.C-AU-005",
        Severity.ERROR,
    ),
    (
        "negative-testing",
        lambda p: p.model_copy(
            update={
                "scenarios": [
                    s.model_copy(
                        update={"quality": s.quality.model_copy(update={"companion_scenario": None})}
                    )
                    if s.archetype == "S-BE-001" and s.quality
                    else s
                    for s in p.scenarios
                ]
            }
        ),
        "PRF-NEGATIVE-TESTING",
        "boundary-enforcement.S-BE-001",
        Severity.ERROR,
    ),
    (
        "tier-missing",
        lambda p: p.model_copy(update={"tiers": p.tiers[:2]}),
        "PRF-TIER",
        "tiers",
        Severity.ERROR,
    ),
    (
        "tier-archetype",
        lambda p: p.model_copy(
            update={
                "tiers": [p.tiers[0].model_copy(update={"required_archetypes": ["C-XX-009"]}), *p.tiers[1:]]
            }
        ),
        "PRF-TIER",
        "tiers[0].required_archetypes",
        Severity.ERROR,
    ),
    (
        "intent-promotion",
        lambda p: p.model_copy(
            update={"intent_promotion": p.intent_promotion.model_copy(update={"recommended_for": []})}
        ),
        "PRF-INTENT-PROMOTION",
        "intent_promotion",
        Severity.WARNING,
    ),
]


def _has(findings: list[Finding], rule: str, path: str, severity: Severity) -> bool:
    return any(f.rule == rule and f.path == path and f.severity is severity for f in findings)


@pytest.mark.parametrize(
    ("change", "rule", "path", "severity"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_profile_rule_fires(
    shipped: Profile, change: Change, rule: str, path: str, severity: Severity
) -> None:
    assert not [f for f in validate_profile(shipped) if f.rule == rule], "precondition: clean before"
    assert _has(validate_profile(change(shipped)), rule, path, severity)


def test_shipped_profile_validates_with_zero_errors(shipped: Profile) -> None:
    findings = validate_profile(shipped)
    assert [f for f in findings if f.severity is Severity.ERROR] == []
    # Known warnings: capability scenarios carry no intent upstream; S-BE-003 uses a subcategory whose
    # declared parent is authority escalation.
    assert Counter(f.rule for f in findings) == {"SCN-INTENT-RECOMMENDED": 29, "SCN-SUBCATEGORY-PARENT": 1}


def test_upstream_copy_validates_structurally(upstream: Profile) -> None:
    findings = validate_profile(upstream)
    errors = Counter(f.rule for f in findings if f.severity is Severity.ERROR)
    # The markdown layout has no recipes, no x-oasis-operator data and no agent configuration schema; it
    # also uses free-text actions. Everything else the validator checks holds for it.
    assert set(errors) == {
        "OPR-RECIPE-MISSING",
        "OPR-CHECK-MISSING",
        "SCN-ACTION-GRAMMAR",
        "PRF-AGENT-CONFIG",
    }
    # The five prose actions; the three ordered steps (`... first/second/third`) are expressions of the
    # one grammar since issue 13 (they were findings while only the engine read ordinals).
    assert errors["SCN-ACTION-GRAMMAR"] == 5
    assert errors["OPR-RECIPE-MISSING"] == 54
