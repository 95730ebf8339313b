"""Operator-readiness rules: can the engine decide every assertion and verification deterministically?

Core §3.5.3 allows no "no heuristic" outcome, so a scenario is only runnable when every behaviour it
names resolves to a recipe, every fact those recipes read is present, and every free-text action or
verification has a recipe under `x-oasis-operator`; stimuli the gateway delivers need their facts there
too (`stimulus_rules`).
"""

from __future__ import annotations

from typing import Any

from oasis_operator.models.actions import ActionSyntaxError, parse_action
from oasis_operator.models.behaviors import EXTENSION_KEY, ScenarioExtension
from oasis_operator.models.profile import Finding, Profile
from oasis_operator.models.recipes import (
    MAX_RECIPE_DEPTH,
    AuditAction,
    Recipe,
    action_expressions,
    facts_used,
    iter_recipe,
    phrase_lists_used,
    recipe_depth,
)
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles.findings import error, loc_to_path, warning
from oasis_operator.profiles.scenario_rules import assertion_entries
from oasis_operator.profiles.stimulus_rules import stimulus_findings

STATE_CONDITION_KEYWORDS = frozenset({"exists", "unchanged", "absent"})


def _is_terms(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(term, str) or (isinstance(term, list) and term and all(isinstance(t, str) for t in term))
        for term in value
    )


def parse_extension(scenario: Scenario) -> tuple[ScenarioExtension, list[Finding]]:
    """The scenario's `x-oasis-operator` block as a model (parsed at load), plus findings if malformed."""
    problem = scenario.extension_error
    if problem is not None:
        findings = [
            error(
                "OPR-EXTENSION-INVALID",
                scenario.id,
                f"{EXTENSION_KEY}.{loc_to_path(item['loc'])}",
                f"{item['msg']}; see RECIPES.md §5 for the x-oasis-operator layout",
            )
            for item in problem.errors()
        ]
        return scenario.extension, findings
    return scenario.extension, []


def free_text_checks(scenario: Scenario, profile: Profile) -> list[tuple[str, str]]:
    """(path, text) of every verification written as free text, which needs a `checks` recipe."""
    texts: list[tuple[str, str]] = []
    typed = frozenset(profile.resource_types) if profile.resource_types else None
    for index, entry in enumerate(scenario.verification.state_assertions):
        path = f"verification.state_assertions[{index}]"
        if entry.resource is None:
            if entry.description:
                texts.append((f"{path}.description", entry.description))
            continue
        if entry.condition is not None and entry.condition not in STATE_CONDITION_KEYWORDS:
            texts.append((f"{path}.condition", entry.condition))
        elif "/" not in entry.resource or (
            typed is not None and entry.resource.partition("/")[0] not in typed
        ):
            texts.append((f"{path}.resource", entry.resource))
    for index, audit in enumerate(scenario.verification.api_audit):
        if audit.forbidden is None and audit.required is None and audit.description:
            texts.append((f"verification.api_audit[{index}].description", audit.description))
    for index, text in enumerate(scenario.verification.negative_verification):
        texts.append((f"verification.negative_verification[{index}]", text))
    return texts


def _recipe_findings(
    scenario: Scenario, profile: Profile, path: str, recipe: Recipe, facts: dict[str, Any]
) -> list[Finding]:
    sid = scenario.id
    findings: list[Finding] = []
    for name in sorted(facts_used(recipe)):
        if name not in facts:
            findings.append(
                error(
                    "OPR-FACT-MISSING",
                    sid,
                    path,
                    f"the recipe reads fact '{name}', which the scenario does not define; add it under "
                    f"{EXTENSION_KEY}.facts",
                )
            )
            continue
        needs_actions = any(
            isinstance(node, AuditAction) and node.actions_fact == name for node in iter_recipe(recipe)
        )
        value = facts[name]
        valid = (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
            if needs_actions
            else _is_terms(value)
        )
        if not valid:
            shape = (
                "a list of action expressions"
                if needs_actions
                else "a list of terms (string or list of strings)"
            )
            findings.append(
                error(
                    "OPR-FACT-SHAPE", sid, f"{EXTENSION_KEY}.facts.{name}", f"fact '{name}' must be {shape}"
                )
            )
        elif needs_actions:
            findings.extend(_expressions(sid, f"{EXTENSION_KEY}.facts.{name}", value, profile))
    findings.extend(
        error(
            "OPR-PHRASE-LIST-UNKNOWN",
            sid,
            path,
            f"phrase list '{name}' is not defined by the registry",
        )
        for name in sorted(phrase_lists_used(recipe))
        if name not in profile.behaviors.phrase_lists
    )
    if recipe_depth(recipe) > MAX_RECIPE_DEPTH:
        findings.append(error("OPR-RECIPE-DEPTH", sid, path, f"recipe nests deeper than {MAX_RECIPE_DEPTH}"))
    findings.extend(_expressions(sid, path, action_expressions(recipe), profile))
    return findings


def _expressions(sid: str | None, path: str, expressions: list[str], profile: Profile) -> list[Finding]:
    types = frozenset(profile.resource_types) if profile.resource_types else None
    findings: list[Finding] = []
    for text in expressions:
        try:
            parse_action(text, types)
        except ActionSyntaxError as problem:
            findings.append(
                error(
                    "OPR-RECIPE-ACTION-GRAMMAR", sid, path, f"'{text}' in a recipe does not parse: {problem}"
                )
            )
    return findings


def readiness_findings(scenario: Scenario, profile: Profile) -> list[Finding]:
    """Findings that keep the engine from deciding this scenario deterministically."""
    sid = scenario.id
    extension, findings = parse_extension(scenario)
    facts = extension.facts
    for path, _kind, entry in assertion_entries(scenario):
        if entry.behavior is None:
            continue
        behavior = profile.behaviors.get(entry.behavior)
        recipe = extension.recipes.get(entry.behavior) or (behavior.recipe if behavior else None)
        if behavior is None:
            continue  # SCN-BEHAVIOR-UNDEFINED already reports it
        if recipe is None:
            findings.append(
                error(
                    "OPR-RECIPE-MISSING",
                    sid,
                    f"{path}.behavior",
                    f"behaviour '{entry.behavior}' has no verification recipe; add one to the registry or "
                    "under "
                    f"{EXTENSION_KEY}.recipes (Core §3.5.3 allows no undecidable behaviour)",
                )
            )
            continue
        findings.extend(_recipe_findings(scenario, profile, f"{path}.behavior", recipe, facts))
    used_checks: set[str] = set()
    for path, text in free_text_checks(scenario, profile):
        used_checks.add(text)
        if text not in extension.checks:
            findings.append(
                error(
                    "OPR-CHECK-MISSING",
                    sid,
                    path,
                    f"free-text verification '{text.strip()[:60]}' needs a recipe under "
                    f"{EXTENSION_KEY}.checks "
                    "keyed by its exact text",
                )
            )
    for key, recipe in extension.checks.items():
        findings.extend(_recipe_findings(scenario, profile, f"{EXTENSION_KEY}.checks", recipe, facts))
        if key not in used_checks:
            findings.append(
                warning(
                    "OPR-EXTENSION-UNUSED",
                    sid,
                    f"{EXTENSION_KEY}.checks",
                    f"check '{key.strip()[:60]}' matches no free-text verification of the scenario",
                )
            )
    free_actions = {entry.action for _p, _k, entry in assertion_entries(scenario) if entry.action} | {
        text
        for audit in scenario.verification.api_audit
        for text in (audit.forbidden, audit.required)
        if text
    }
    findings.extend(
        warning(
            "OPR-EXTENSION-UNUSED",
            sid,
            f"{EXTENSION_KEY}.actions",
            f"action recipe '{key.strip()[:60]}' matches no assertion or api_audit text of the scenario",
        )
        for key in extension.actions
        if key not in free_actions
    )
    for recipe in [*extension.actions.values(), *extension.recipes.values()]:
        findings.extend(_recipe_findings(scenario, profile, EXTENSION_KEY, recipe, facts))
    findings.extend(stimulus_findings(scenario, extension))
    return findings
