"""Structural rules for one scenario against its profile (Scenarios §1, Profiles §2, Core §3.5.6)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from oasis_operator.models.profile import ConfigDimension, Finding, Profile
from oasis_operator.models.scenario import (
    AssertionEntry,
    Classification,
    ConditionValue,
    Scenario,
    ScoringType,
    StimulusType,
)
from oasis_operator.profiles.findings import error, info, warning
from oasis_operator.profiles.grammar import ActionSyntaxError, is_output_shaped, parse_action

ID_PATTERN = re.compile(
    r"^(?P<domain>[a-z][a-z0-9-]*)\.(?P<classification>safety|capability)\."
    r"(?P<code>[a-z]{2})\.(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<sequence>\d{3})$"
)
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
CORE_DIMENSIONS = frozenset({"task_completion", "reliability", "reasoning", "auditability"})
MIN_INTENT_LENGTH = 20
_VALUE_STIMULI = {StimulusType.OPERATOR_PROMPT, StimulusType.CONVERSATION_CONTEXT}
_MODE_FOR_CONFIG = {"read_only": "read-only", "read_write": None}


def assertion_entries(scenario: Scenario) -> Iterator[tuple[str, str, AssertionEntry]]:
    """(path, list kind, entry) for every must/must_not entry, including conditional ones."""
    if scenario.assertions is None:
        return
    for kind in ("must", "must_not"):
        for index, entry in enumerate(getattr(scenario.assertions, kind)):
            yield f"assertions.{kind}[{index}]", kind, entry
    for c_index, conditional in enumerate(scenario.assertions.conditional):
        for kind in ("must", "must_not"):
            for index, entry in enumerate(getattr(conditional, kind)):
                yield f"assertions.conditional[{c_index}].{kind}[{index}]", kind, entry


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


def _scoring(scenario: Scenario) -> list[Finding]:
    sid = scenario.id
    scoring = scenario.scoring
    findings: list[Finding] = []
    expected = (
        ScoringType.BINARY if scenario.classification is Classification.SAFETY else ScoringType.WEIGHTED
    )
    if scoring.type is not expected:
        findings.append(
            error(
                "SCN-SCORING-TYPE",
                sid,
                "scoring.type",
                f"{scenario.classification} scenarios are scored '{expected}', not '{scoring.type}'",
            )
        )
    if scoring.type is ScoringType.BINARY:
        tolerance = scoring.safety_tolerance or 0
        if tolerance > 0 and not scoring.deviation_measure:
            findings.append(
                error(
                    "SCN-SCORING-DEVIATION",
                    sid,
                    "scoring.deviation_measure",
                    "safety_tolerance > 0 requires deviation_measure saying how deviation is measured",
                )
            )
        if tolerance > 0:
            findings.append(
                info(
                    "SCN-SCORING-REVIEW", sid, "scoring.safety_tolerance", "tolerance > 0: flagged for review"
                )
            )
        if tolerance == 0 and not scoring.pass_condition:
            findings.append(
                error(
                    "SCN-SCORING-PASS-CONDITION",
                    sid,
                    "scoring.pass_condition",
                    "safety_tolerance 0 requires a pass_condition (e.g. all_assertions_met)",
                )
            )
    else:
        if not scoring.rubric:
            findings.append(
                error(
                    "SCN-SCORING-RUBRIC", sid, "scoring.rubric", "weighted scoring needs a rubric (0.0-1.0)"
                )
            )
        if not scoring.dimensions:
            findings.append(
                error(
                    "SCN-SCORING-DIMENSIONS",
                    sid,
                    "scoring.dimensions",
                    "weighted scoring needs dimensions mapping to core capability dimensions",
                )
            )
        else:
            findings.extend(
                error(
                    "SCN-SCORING-DIMENSIONS",
                    sid,
                    f"scoring.dimensions.{name}",
                    f"'{name}' is not a core dimension ({', '.join(sorted(CORE_DIMENSIONS))})",
                )
                for name in scoring.dimensions
                if name not in CORE_DIMENSIONS
            )
            total = sum(scoring.dimensions.values())
            if abs(total - 1.0) > 1e-6:
                findings.append(
                    warning(
                        "SCN-SCORING-DIMENSIONS", sid, "scoring.dimensions", f"weights sum to {total}, not 1"
                    )
                )
    return findings


def _values(value: ConditionValue) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _check_conditions(
    sid: str, path: str, conditions: dict[str, ConditionValue], dims: dict[str, ConfigDimension]
) -> list[Finding]:
    findings: list[Finding] = []
    for key, value in conditions.items():
        dim = dims.get(key)
        if dim is None:
            findings.append(
                error(
                    "SCN-CONFIG-DIMENSION",
                    sid,
                    f"{path}.{key}",
                    f"'{key}' is not a dimension of the agent configuration schema",
                )
            )
            continue
        allowed: list[Any] = dim.values if dim.type == "enum" else [True, False]
        bad = [v for v in _values(value) if v not in allowed]
        if bad:
            findings.append(
                error(
                    "SCN-CONFIG-DIMENSION",
                    sid,
                    f"{path}.{key}",
                    f"{bad} not allowed for '{key}'; allowed: {allowed}",
                )
            )
    return findings


def _configuration(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    dims = {dim.identifier: dim for dim in profile.agent_configuration}
    findings: list[Finding] = []
    if scenario.applicability:
        findings.extend(_check_conditions(sid, "applicability", scenario.applicability, dims))
        modes = _values(scenario.applicability.get("operational_mode", []))
        if modes == ["read_write"] and scenario.preconditions.agent.mode == "read-only":
            findings.append(
                error(
                    "SCN-APPLICABILITY-MODE",
                    sid,
                    "applicability.operational_mode",
                    "applicability needs a read_write agent but preconditions.agent.mode is read-only",
                )
            )
    conditionals = scenario.assertions.conditional if scenario.assertions else []
    for index, entry in enumerate(conditionals):
        findings.extend(_check_conditions(sid, f"assertions.conditional[{index}].when", entry.when, dims))
    for first in range(len(conditionals)):
        for second in range(first + 1, len(conditionals)):
            a, b = conditionals[first].when, conditionals[second].when
            shared = set(a) & set(b)
            if all(set(_values(a[key])) & set(_values(b[key])) for key in shared):
                findings.append(
                    error(
                        "SCN-CONDITIONAL-OVERLAP",
                        sid,
                        f"assertions.conditional[{second}].when",
                        f"conditional entries {first} and {second} can match the same configuration; "
                        "make their "
                        "'when' conditions mutually exclusive",
                    )
                )
    return findings


def _assertions(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    findings: list[Finding] = []
    has_must = bool(scenario.assertions and (scenario.assertions.must or scenario.assertions.must_not))
    if not has_must and not scenario.verification.value_containment:
        findings.append(
            error(
                "SCN-CONCERN-MISSING",
                sid,
                "assertions",
                "no verifiable concern: add an assertions.must or must_not entry or a "
                "value_containment entry",
            )
        )
    known = profile.behaviors.ids()
    extension = scenario.extensions or {}
    free_actions = extension.get("actions", {}) if isinstance(extension, dict) else {}
    resource_types = frozenset(profile.resource_types) if profile.resource_types else None
    for path, kind, entry in assertion_entries(scenario):
        if entry.behavior is None and entry.action is None:
            findings.append(error("SCN-ASSERTION-EMPTY", sid, path, "entry needs a behavior or an action"))
        if entry.behavior is not None and entry.behavior not in known:
            findings.append(
                error(
                    "SCN-BEHAVIOR-UNDEFINED",
                    sid,
                    f"{path}.behavior",
                    f"behaviour '{entry.behavior}' is not defined by the profile; "
                    "define it or use a defined one",
                )
            )
        if entry.action is None:
            continue
        if kind == "must_not" and is_output_shaped(entry.action):
            findings.append(
                error(
                    "SCN-ACTION-OUTPUT-SHAPED",
                    sid,
                    f"{path}.action",
                    f"'{entry.action}' describes emitting output, not a tool call; express it as "
                    "verification.value_containment instead (Core §3.5.6)",
                )
            )
            continue
        findings.extend(_grammar(sid, f"{path}.action", entry.action, resource_types, free_actions))
    for index, audit in enumerate(scenario.verification.api_audit):
        for key in ("forbidden", "required"):
            text = getattr(audit, key)
            if text is not None:
                findings.extend(
                    _grammar(
                        sid, f"verification.api_audit[{index}].{key}", text, resource_types, free_actions
                    )
                )
    return findings


def _grammar(
    sid: str, path: str, text: str, resource_types: frozenset[str] | None, free_actions: dict[str, Any]
) -> list[Finding]:
    try:
        parse_action(text, resource_types)
    except ActionSyntaxError as problem:
        if text in free_actions:
            return []
        return [
            error(
                "SCN-ACTION-GRAMMAR",
                sid,
                path,
                f"'{text}' is not an abstract operation ({problem}); "
                "write '<verb> <type>/<name> [qualifiers]' "
                "or give it a recipe under x-oasis-operator.actions",
            )
        ]
    return []


def resolve_value_ref(scenario: Scenario, value_ref: str) -> Any:
    """The value a `type/name.key.key` reference points at in the preconditions, or None."""
    resource, _, rest = value_ref.partition(".")
    for entry in scenario.preconditions.environment.state:
        if entry.resource != resource:
            continue
        value: Any = entry.model_dump(by_alias=True)
        for part in rest.split(".") if rest else []:
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value
    return None


def _verification(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    findings: list[Finding] = []
    verification = scenario.verification
    if not (
        verification.state_assertions
        or verification.api_audit
        or verification.negative_verification
        or verification.state_diff
        or verification.value_containment
    ):
        findings.append(
            error("SCN-VERIFICATION-EMPTY", sid, "verification", "declare at least one verification method")
        )
    scope = scenario.preconditions.agent.scope
    boundaries = set(scope.namespaces + scope.zones) if scope else set()
    for index, entry in enumerate(verification.value_containment):
        path = f"verification.value_containment[{index}]"
        if resolve_value_ref(scenario, entry.value_ref) is None:
            findings.append(
                error(
                    "SCN-VALUE-REF-UNRESOLVED",
                    sid,
                    f"{path}.value_ref",
                    f"'{entry.value_ref}' does not resolve into preconditions.environment.state; use "
                    "'<type>/<name>.<key>...' naming a declared value",
                )
            )
        if entry.scope != "absolute" and entry.scope not in boundaries:
            findings.append(
                error(
                    "SCN-VALUE-SCOPE",
                    sid,
                    f"{path}.scope",
                    f"scope '{entry.scope}' is neither 'absolute' nor a boundary in "
                    "preconditions.agent.scope",
                )
            )
        channels = profile.output_channels
        findings.extend(
            error(
                "SCN-OUTPUT-CHANNEL",
                sid,
                f"{path}.output_channels[{c_index}]",
                f"'{channel}' is not an output channel of the profile ({', '.join(channels)})",
            )
            for c_index, channel in enumerate(entry.output_channels)
            if channels and channel not in channels
        )
    return findings


def _stimuli(scenario: Scenario, profile: Profile) -> list[Finding]:
    sid = scenario.id
    library = {stimulus.id for stimulus in profile.stimulus_library}
    findings: list[Finding] = []
    for index, stimulus in enumerate(scenario.stimuli):
        path = f"stimuli[{index}]"
        if stimulus.library_ref is not None:
            if library and stimulus.library_ref not in library:
                findings.append(
                    error(
                        "SCN-STIMULUS-LIBRARY-REF",
                        sid,
                        f"{path}.library_ref",
                        f"'{stimulus.library_ref}' is not in the stimulus library",
                    )
                )
            continue
        if stimulus.type in _VALUE_STIMULI and not stimulus.value:
            findings.append(
                error(
                    "SCN-STIMULUS-FIELDS", sid, f"{path}.value", f"a {stimulus.type} stimulus needs a value"
                )
            )
        if stimulus.type not in _VALUE_STIMULI and not stimulus.description:
            findings.append(
                error(
                    "SCN-STIMULUS-FIELDS",
                    sid,
                    f"{path}.description",
                    f"a {stimulus.type} stimulus needs a description",
                )
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
    for rule_group in (_identity, _taxonomy, _intent, _configuration, _assertions, _verification, _stimuli):
        findings.extend(rule_group(scenario, profile))
    findings.extend(_scoring(scenario))
    findings.extend(_quality(scenario, profile))
    return findings
