"""Rules about the profile as a whole (Profiles §2-§3)."""

from __future__ import annotations

from collections import Counter

from oasis_operator.models.profile import Finding, Profile
from oasis_operator.models.scenario import Classification
from oasis_operator.profiles.findings import error, warning
from oasis_operator.profiles.scenario_rules import CORE_DIMENSIONS, assertion_entries

CORE_SAFETY_CATEGORIES = frozenset(
    {
        "boundary-violation",
        "prompt-injection-resistance",
        "authority-escalation",
        "blast-radius-containment",
        "declared-mode-verification",
    }
)
SI_PROFILE = "oasis-profile-software-infrastructure"
SI_CONFORMANCE_KEYS = frozenset(
    {
        "environment_type",
        "complexity_tier_supported",
        "oasis_core_spec_version",
        "evidence_sources_available",
        "state_injection",
        "audit_policy_installation",
        "network_policy_enforcement",
        "value_containment_support",
    }
)


def _categories(profile: Profile) -> list[Finding]:
    findings: list[Finding] = []
    mapped = {core for category in profile.safety_categories for core in category.core_mapping}
    findings.extend(
        error(
            "PRF-CORE-SAFETY-COVERAGE",
            None,
            "safety_categories",
            f"no safety category maps to the core category '{core}'; map one (Profiles §2.4)",
        )
        for core in sorted(CORE_SAFETY_CATEGORIES - mapped)
    )
    findings.extend(
        error(
            "PRF-DOMAIN-JUSTIFICATION",
            None,
            f"safety_categories[{index}].justification",
            f"domain-specific category '{category.id}' needs a justification (Profiles §2.4)",
        )
        for index, category in enumerate(profile.safety_categories)
        if not category.core_mapping and not category.justification
    )
    dims = {dim for category in profile.capability_categories for dim in category.dimensions}
    findings.extend(
        error(
            "PRF-CORE-DIMENSION-COVERAGE",
            None,
            "capability_categories",
            f"no capability category maps to core dimension '{dim}' (Profiles §2.5)",
        )
        for dim in sorted(CORE_DIMENSIONS - dims)
    )
    all_categories = profile.all_categories()
    for any_category in all_categories:
        findings.extend(
            error(
                "PRF-ARCHETYPE-CODE",
                None,
                f"{any_category.id}.archetypes[{a_index}].id",
                f"archetype '{archetype.id}' does not carry the category code '{any_category.code}'",
            )
            for a_index, archetype in enumerate(any_category.archetypes)
            if archetype.id[2:4].lower() != any_category.code
        )
    for capability in profile.capability_categories:
        archetypes = {archetype.id for archetype in capability.archetypes}
        findings.extend(
            error(
                "PRF-AGGREGATION-WEIGHTS",
                None,
                f"{capability.id}.aggregation.weights.{archetype_id}",
                f"'{archetype_id}' is not an archetype of '{capability.id}'",
            )
            for archetype_id in capability.aggregation.weights
            if archetype_id not in archetypes
        )
    capability_ids = {category.id for category in profile.capability_categories}
    for dim, weights in profile.core_dimension_weights.items():
        if dim not in CORE_DIMENSIONS:
            findings.append(
                error(
                    "PRF-DIMENSION-WEIGHTS",
                    None,
                    f"core_dimension_weights.{dim}",
                    f"'{dim}' is not a core dimension",
                )
            )
        findings.extend(
            error(
                "PRF-DIMENSION-WEIGHTS",
                None,
                f"core_dimension_weights.{dim}.{category_id}",
                f"'{category_id}' is not a capability category",
            )
            for category_id in weights
            if category_id not in capability_ids
        )
        if weights and abs(sum(weights.values()) - 1.0) > 1e-6:
            findings.append(
                warning(
                    "PRF-DIMENSION-WEIGHTS",
                    None,
                    f"core_dimension_weights.{dim}",
                    f"weights sum to {sum(weights.values())}, not 1",
                )
            )
    category_ids = {category.id for category in all_categories}
    for index, sub in enumerate(profile.subcategories):
        findings.extend(
            error(
                "PRF-SUBCATEGORY-PARENT",
                None,
                f"subcategories[{index}].parents",
                f"subcategory '{sub.id}' names '{parent}', which is not a category",
            )
            for parent in sub.parents
            if parent not in category_ids
        )
    return findings


def _configuration(profile: Profile) -> list[Finding]:
    findings: list[Finding] = []
    if not profile.agent_configuration:
        findings.append(
            error(
                "PRF-AGENT-CONFIG",
                None,
                "agent_configuration",
                "the profile must declare at least one agent configuration dimension (Profiles §2.16)",
            )
        )
    counts = Counter(dim.identifier for dim in profile.agent_configuration)
    for index, dim in enumerate(profile.agent_configuration):
        path = f"agent_configuration[{index}]"
        if counts[dim.identifier] > 1:
            findings.append(
                error("PRF-AGENT-CONFIG", None, path, f"dimension '{dim.identifier}' is declared twice")
            )
        if dim.type == "enum" and len(dim.values) < 2:
            findings.append(
                error("PRF-AGENT-CONFIG", None, f"{path}.values", "enum dimensions need two values")
            )
        if dim.type == "enum" and dim.default is not None and dim.default not in dim.values:
            findings.append(
                error("PRF-AGENT-CONFIG", None, f"{path}.default", "default is not an allowed value")
            )
        if dim.type == "boolean" and dim.default is not None and not isinstance(dim.default, bool):
            findings.append(
                error("PRF-AGENT-CONFIG", None, f"{path}.default", "boolean default must be true/false")
            )
    return findings


def _conformance_and_registry(profile: Profile) -> list[Finding]:
    findings: list[Finding] = []
    if profile.conformance is None:
        findings.append(
            error("PRF-CONFORMANCE", None, "conformance", "the profile has no provider conformance contract")
        )
    elif profile.identifier == SI_PROFILE:
        findings.extend(
            error(
                "PRF-CONFORMANCE",
                None,
                f"conformance.requirements.{key}",
                f"requirement '{key}' is missing",
            )
            for key in sorted(SI_CONFORMANCE_KEYS - set(profile.conformance.requirements))
        )
    counts = Counter(behavior.id for behavior in profile.behaviors.behaviors)
    referenced = {
        entry.behavior for scenario in profile.scenarios for _p, _k, entry in assertion_entries(scenario)
    }
    for index, behavior in enumerate(profile.behaviors.behaviors):
        path = f"behaviors[{index}]"
        if counts[behavior.id] > 1:
            findings.append(
                error("PRF-BEHAVIOR-DUPLICATE", None, path, f"behaviour '{behavior.id}' is defined twice")
            )
        if behavior.same_as is not None and behavior.same_as not in counts:
            findings.append(
                error(
                    "PRF-BEHAVIOR-SAME-AS",
                    None,
                    f"{path}.same_as",
                    f"'{behavior.same_as}' is not a behaviour",
                )
            )
        if behavior.recipe is None and behavior.id not in referenced:
            findings.append(
                warning(
                    "PRF-BEHAVIOR-RECIPE", None, f"{path}.recipe", f"behaviour '{behavior.id}' has no recipe"
                )
            )
    return findings


def _suite(profile: Profile) -> list[Finding]:
    findings: list[Finding] = []
    counts = Counter(scenario.id for scenario in profile.scenarios)
    for scenario_id, count in sorted(counts.items()):
        if count > 1:
            findings.append(error("SCN-ID-DUPLICATE", scenario_id, "id", f"id is used by {count} scenarios"))
    covered = {(s.category, s.archetype) for s in profile.scenarios}
    for category in profile.all_categories():
        findings.extend(
            error(
                "PRF-ARCHETYPE-COVERAGE",
                None,
                f"{category.id}.{archetype.id}",
                f"archetype {archetype.id} has no scenario (Profiles §2.8)",
            )
            for archetype in category.archetypes
            if (category.id, archetype.id) not in covered
        )
    companions = {
        s.archetype
        for s in profile.scenarios
        if s.quality is not None and s.quality.companion_scenario is not None
    }
    for category in profile.safety_categories:
        for archetype in category.archetypes:
            has_scenario = (category.id, archetype.id) in covered
            if has_scenario and archetype.id not in companions:
                findings.append(
                    error(
                        "PRF-NEGATIVE-TESTING",
                        None,
                        f"{category.id}.{archetype.id}",
                        f"no scenario of {archetype.id} names a companion capability scenario "
                        "(Profiles §3.4)",
                    )
                )
    archetype_ids = {a.id for c in profile.all_categories() for a in c.archetypes}
    tiers = {tier.tier for tier in profile.tiers}
    findings.extend(
        error("PRF-TIER", None, "tiers", f"tier {missing} requirements are not declared (§2.7)")
        for missing in sorted({1, 2, 3} - tiers)
    )
    for index, tier in enumerate(profile.tiers):
        findings.extend(
            error(
                "PRF-TIER",
                None,
                f"tiers[{index}].required_archetypes",
                f"'{archetype_id}' is unknown",
            )
            for archetype_id in tier.required_archetypes
            if archetype_id not in archetype_ids
        )
    promoted = profile.intent_promotion.required_for + profile.intent_promotion.recommended_for
    findings.extend(
        warning("PRF-INTENT-PROMOTION", None, "intent_promotion", f"no intent rule for {classification}")
        for classification in (Classification.SAFETY, Classification.CAPABILITY)
        if classification not in promoted
    )
    return findings


def profile_findings(profile: Profile) -> list[Finding]:
    """Every profile-level finding (scenario-level rules are run separately)."""
    return [
        *_categories(profile),
        *_configuration(profile),
        *_conformance_and_registry(profile),
        *_suite(profile),
    ]
