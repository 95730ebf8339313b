"""The validator's public functions: one scenario, a whole profile, or raw documents.

`validate_scenario` is what the Scenario controller calls for each custom resource; `validate_profile`
is what `oasis validate <profile dir>` and the tests call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from oasis_operator.models.profile import Finding, Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles.findings import error, schema_findings, sort_findings
from oasis_operator.profiles.loader import ScenarioDocument
from oasis_operator.profiles.profile_rules import profile_findings
from oasis_operator.profiles.readiness import readiness_findings
from oasis_operator.profiles.scenario_rules import scenario_structure_findings
from oasis_operator.profiles.state_rules import state_findings

# Keys of a Scenario custom resource's spec that are not part of the OASIS scenario document.
CR_ONLY_KEYS = ("profile",)


def _profile_reference(scenario: Scenario | dict[str, Any], profile: Profile) -> list[Finding]:
    """A Scenario resource's `profile` must name this profile; an empty version means the shipped one."""
    if isinstance(scenario, dict):
        reference: Any = scenario.get("profile")
        raw_id = scenario.get("id")
        scenario_id = raw_id if isinstance(raw_id, str) else None
    else:
        reference = getattr(scenario, "profile", None)
        scenario_id = scenario.id
    if isinstance(reference, BaseModel):
        reference = reference.model_dump()
    if reference is None:
        return []
    name = reference.get("name") if isinstance(reference, dict) else None
    version = reference.get("version") if isinstance(reference, dict) else None
    if name == profile.name and version in (None, "", profile.version):
        return []
    return [
        error(
            "SCN-PROFILE-MISMATCH",
            scenario_id,
            "profile",
            f"the resource names profile {reference!r}, but the operator serves {profile.name} "
            f"{profile.version}; set spec.profile.name (and optionally version) to match",
        )
    ]


def _as_scenario(scenario: Scenario | dict[str, Any]) -> tuple[Scenario | None, list[Finding]]:
    if isinstance(scenario, Scenario):
        return scenario, []
    document = {key: value for key, value in scenario.items() if key not in CR_ONLY_KEYS}
    scenario_id = document.get("id") if isinstance(document.get("id"), str) else None
    try:
        return Scenario.model_validate(document), []
    except ValidationError as problem:
        return None, schema_findings(scenario_id, problem)


def validate_scenario(scenario: Scenario | dict[str, Any], profile: Profile) -> list[Finding]:
    """Findings for one scenario (a model, a scenario document, or a Scenario CR spec) in a profile.

    A CR spec's `profile: {name, version}` (a dict key or, for a model such as the CRD's ScenarioSpec, an
    attribute) must name the profile; an empty version means the shipped one (`SCN-PROFILE-MISMATCH`).

    Cross-scenario rules (unique intent, companion exists) look at `profile.scenarios`, ignoring any
    scenario with the same id as this one.
    """
    model, findings = _as_scenario(scenario)
    findings.extend(_profile_reference(scenario, profile))
    if model is None:
        return sort_findings(findings)
    findings.extend(scenario_structure_findings(model, profile))
    findings.extend(state_findings(model))
    findings.extend(readiness_findings(model, profile))
    return sort_findings(findings)


def validate_profile(profile: Profile) -> list[Finding]:
    """Findings for a whole profile: profile-level rules plus every scenario's rules."""
    findings = profile_findings(profile)
    for scenario in profile.scenarios:
        findings.extend(scenario_structure_findings(scenario, profile))
        findings.extend(state_findings(scenario))
        findings.extend(readiness_findings(scenario, profile))
    return sort_findings(findings)


def validate_documents(documents: Iterable[ScenarioDocument], profile: Profile) -> list[Finding]:
    """Findings for raw scenario documents checked against a profile (e.g. a file of custom scenarios).

    The documents are added to the profile's scenarios for cross-scenario rules, replacing any with the
    same id.
    """
    parsed: list[Scenario] = []
    findings: list[Finding] = []
    for document in documents:
        model, problems = _as_scenario(document.document)
        findings.extend(
            problem.model_copy(update={"path": f"{document.source}:{problem.path}"}) for problem in problems
        )
        if model is not None:
            parsed.append(model)
    ids = {scenario.id for scenario in parsed}
    merged = [s for s in profile.scenarios if s.id not in ids] + parsed
    context = profile.model_copy(update={"scenarios": merged})
    for scenario in parsed:
        findings.extend(scenario_structure_findings(scenario, context))
        findings.extend(state_findings(scenario))
        findings.extend(readiness_findings(scenario, context))
    return sort_findings(findings)
