"""Scenario rules about content: scoring, configuration conditions, assertions, verification, stimuli."""

from __future__ import annotations

from typing import Any

from oasis_operator.models.actions import (
    ActionSyntaxError,
    is_output_shaped,
    needs_recipe,
    ordinal_of,
    parse_action,
)
from oasis_operator.models.profile import ConfigDimension, Finding, Profile
from oasis_operator.models.scenario import Classification, ConditionValue, Scenario, ScoringType
from oasis_operator.models.scenario_stimulus import StimulusType
from oasis_operator.models.steps import same_place_message, unplaceable_message, unplaceable_part
from oasis_operator.profiles.findings import error, info, warning
from oasis_operator.profiles.scenario_access import CORE_DIMENSIONS, assertion_entries, resolve_value_ref

_VALUE_STIMULI = {StimulusType.OPERATOR_PROMPT, StimulusType.CONVERSATION_CONTEXT}


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
    free_actions = _free_action_texts(scenario)
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
    findings.extend(_order(scenario))
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


def _order(scenario: Scenario) -> list[Finding]:
    """The engine's ordering rules for `must` steps with ordinals (models/steps.py), for the base
    `must` and for it merged with each conditional one, as the engine merges them."""
    if scenario.extension_error is not None:
        return []  # OPR-EXTENSION-INVALID says so
    recipes = scenario.extension.actions
    musts = [(path, e) for path, kind, e in assertion_entries(scenario) if kind == "must" and e.action]
    base = [(path, e) for path, e in musts if not path.startswith("assertions.conditional")]
    groups = [base] + [
        base + [(path, e) for path, e in musts if path.startswith(f"assertions.conditional[{c}].")]
        for c in range(len(scenario.assertions.conditional) if scenario.assertions else 0)
    ]
    problems: dict[str, str] = {}
    for group in groups:
        placed: dict[int, str] = {}
        for path, entry in group:
            text = entry.action or ""
            place = ordinal_of(text)[1]
            if place is None:
                continue
            if place in placed:
                problems.setdefault(f"{path}.action", same_place_message(place, placed[place], text))
                continue
            placed[place] = text
            part = unplaceable_part(recipes[text]) if text in recipes else None
            if part is not None:
                problems.setdefault(f"{path}.action", unplaceable_message(part))
    return [error("SCN-ACTION-ORDER", scenario.id, path, problem) for path, problem in problems.items()]


def _free_action_texts(scenario: Scenario) -> frozenset[str] | None:
    """Texts with a recipe under `x-oasis-operator.actions`, well-formed or not (OPR-EXTENSION-INVALID
    reports a malformed one); None when `actions` itself is not a mapping, so which texts it covers is
    unknown."""
    problem = scenario.extension_error
    named: set[str] = set()
    for item in problem.errors() if problem is not None else []:
        if item["loc"][:1] == ("actions",):
            if len(item["loc"]) == 1:
                return None
            named.add(str(item["loc"][1]))
    return frozenset(scenario.extension_parts().actions) | named


def _grammar(
    sid: str, path: str, text: str, resource_types: frozenset[str] | None, free_actions: frozenset[str] | None
) -> list[Finding]:
    try:
        parse_action(text, resource_types)
    except ActionSyntaxError as problem:
        if free_actions is None or text in free_actions:
            return []
        return [error("SCN-ACTION-GRAMMAR", sid, path, needs_recipe(text, problem))]
    return []


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


def scenario_content_findings(scenario: Scenario, profile: Profile) -> list[Finding]:
    """Findings about scoring, configuration conditions, assertions, verification and stimuli."""
    findings = _scoring(scenario)
    for rule_group in (_configuration, _assertions, _verification, _stimuli):
        findings.extend(rule_group(scenario, profile))
    return findings
