"""Structural rules for one scenario against its profile (Scenarios §1, Profiles §2, Core §3.5.6).

Identity, taxonomy, intent and companion rules live here; content rules in `content_rules`.
"""

from __future__ import annotations

import re

from oasis_operator.models.profile import Finding, Profile
from oasis_operator.models.scenario import Classification, Scenario
from oasis_operator.profiles.content_rules import scenario_content_findings
from oasis_operator.profiles.findings import error, warning
from oasis_operator.profiles.scenario_access import CORE_DIMENSIONS, assertion_entries, resolve_value_ref

__all__ = ["CORE_DIMENSIONS", "assertion_entries", "resolve_value_ref", "scenario_structure_findings"]

ID_PATTERN = re.compile(
    r"^(?P<domain>[a-z][a-z0-9-]*)\.(?P<classification>safety|capability)\."
    r"(?P<code>[a-z]{2})\.(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<sequence>\d{3})$"
)


SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


MIN_INTENT_LENGTH = 20


def _identity(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    findings: list[Finding] = []
    match = ID_PATTERN.match(sid)
    if not match:
        findings.append(
            error(
                "SCN-ID-CONVENTION",
                sid,
                "id",
                f"id '{sid}' does not follow "
                "{domain}.{classification}.{category_code}.{archetype}-NNN "
                "(e.g. infra.safety.be.zone-violation-001); rename it",
            )
        )
    else:
        code = profile.category_code(scenario.category)
        if match["classification"] != scenario.classification.value:
            findings.append(
                error(
                    "SCN-ID-CONVENTION",
                    sid,
                    "id",
                    f"id says '{match['classification']}' but classification is '{scenario.classification}'",
                )
            )
        if code is not None and match["code"] != code:
            findings.append(
                error(
                    "SCN-ID-CONVENTION",
                    sid,
                    "id",
                    f"id category code '{match['code']}' does not match category '{scenario.category}' "
                    f"(code '{code}')",
                )
            )
    if not SEMVER.match(scenario.version):
        findings.append(
            error("SCN-VERSION-SEMVER", sid, "version", f"'{scenario.version}' is not a semantic version")
        )
    return findings


def _taxonomy(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    findings: list[Finding] = []
    categories = profile.category_ids(scenario.classification)
    if scenario.category not in categories:
        findings.append(
            error(
                "SCN-CATEGORY-UNKNOWN",
                sid,
                "category",
                f"'{scenario.category}' is not a {scenario.classification} category of the profile; "
                f"use one of {', '.join(sorted(categories))}",
            )
        )
    elif scenario.archetype not in profile.archetypes_of(scenario.category):
        findings.append(
            error(
                "SCN-ARCHETYPE-UNKNOWN",
                sid,
                "archetype",
                f"archetype '{scenario.archetype}' is not defined for category '{scenario.category}'; "
                f"use one "
                f"of {', '.join(sorted(profile.archetypes_of(scenario.category)))}",
            )
        )
    if scenario.subcategory is not None:
        defined = {sub.id: sub for sub in profile.subcategories}
        sub = defined.get(scenario.subcategory)
        if sub is None:
            findings.append(
                error(
                    "SCN-SUBCATEGORY-UNKNOWN",
                    sid,
                    "subcategory",
                    f"subcategory '{scenario.subcategory}' is not defined by the profile; remove it or use a "
                    "defined one",
                )
            )
        elif scenario.category not in sub.parents:
            findings.append(
                warning(
                    "SCN-SUBCATEGORY-PARENT",
                    sid,
                    "subcategory",
                    f"subcategory '{scenario.subcategory}' belongs to {', '.join(sub.parents)}, not to "
                    f"'{scenario.category}'; pick a subcategory of this category or extend its parents",
                )
            )
    unknown_tools = [
        tool for tool in scenario.preconditions.agent.tools if tool not in profile.interface_types
    ]
    if profile.interface_types and unknown_tools:
        findings.append(
            error(
                "SCN-TOOLS-UNKNOWN",
                sid,
                "preconditions.agent.tools",
                f"{', '.join(unknown_tools)} are not interface types of the profile; declare interface types",
            )
        )
    return findings


def _intent(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    promotion = profile.intent_promotion
    if scenario.intent is None:
        if scenario.classification in promotion.required_for:
            return [
                error(
                    "SCN-INTENT-REQUIRED",
                    sid,
                    "intent",
                    f"the profile requires an intent for {scenario.classification} scenarios; add one "
                    "(at least 20 characters) saying which failure the scenario exposes",
                )
            ]
        if scenario.classification in promotion.recommended_for:
            return [
                warning("SCN-INTENT-RECOMMENDED", sid, "intent", "an intent is recommended; consider one")
            ]
        return []
    if len(scenario.intent.strip()) < MIN_INTENT_LENGTH:
        return [error("SCN-INTENT-LENGTH", sid, "intent", "intent must be at least 20 characters")]
    findings: list[Finding] = []
    findings.extend(
        error("SCN-INTENT-DUPLICATE", sid, "intent", f"intent is identical to that of '{other.id}'")
        for other in profile.scenarios
        if other.id != sid and other.intent is not None and other.intent.strip() == scenario.intent.strip()
    )
    return findings


def _quality(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    quality = scenario.quality
    if quality is None or quality.companion_scenario is None or not profile.scenarios:
        return []
    companion = profile.scenario(quality.companion_scenario)
    if companion is None:
        return [
            error(
                "SCN-COMPANION-MISSING",
                sid,
                "quality.companion_scenario",
                f"companion '{quality.companion_scenario}' is not a scenario of the profile",
            )
        ]
    if companion.classification is not Classification.CAPABILITY:
        return [
            error(
                "SCN-COMPANION-MISSING",
                sid,
                "quality.companion_scenario",
                f"companion '{companion.id}' must be a capability scenario",
            )
        ]
    return []


def scenario_structure_findings(scenario: Scenario, profile: Profile) -> list[Finding]:
    """All structural findings for one parsed scenario."""
    findings: list[Finding] = []
    for rule_group in (_identity, _taxonomy, _intent, _quality):
        findings.extend(rule_group(scenario, profile))
    findings.extend(scenario_content_findings(scenario, profile))
    return findings
