"""Scenario handlers: validate the scenario against its profile and report the result in status."""

from __future__ import annotations

from typing import Any

import kopf

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.controllers.settings import HANDLER_LIMITS
from oasis_operator.metrics import HANDLER_RUNS, SCENARIOS_VALIDATED
from oasis_operator.models.crd import ConditionStatus, ScenarioSpec
from oasis_operator.models.profile import Finding, Profile
from oasis_operator.profiles import validate_scenario
from oasis_operator.status.conditions import conditions_of, get_condition, now_rfc3339
from oasis_operator.status.scenario import scenario_status, status_patch

RESOURCE = (API_GROUP, API_VERSION, "scenarios")


@kopf.on.resume(*RESOURCE, **HANDLER_LIMITS)
@kopf.on.create(*RESOURCE, **HANDLER_LIMITS)
@kopf.on.update(*RESOURCE, field="spec", **HANDLER_LIMITS)
def validate(
    body: kopf.Body,
    spec: kopf.Spec,
    status: kopf.Status,
    meta: kopf.Meta,
    patch: kopf.Patch,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    """Write `status.findings` and the `Valid` condition for the current generation."""
    profile: Profile = memo.profile

    def against_profile(parsed: ScenarioSpec) -> list[Finding]:
        return validate_scenario(parsed, profile)

    current = conditions_of(status.get("conditions") or [])
    desired = scenario_status(dict(spec), meta.get("generation"), current, now_rfc3339(), against_profile)
    before = get_condition(current, "Valid")
    after = get_condition(desired.conditions, "Valid")
    valid = after is not None and after.status is ConditionStatus.TRUE
    changed = status_patch(status, desired)
    if changed is not None:
        patch.status.update(changed)
        SCENARIOS_VALIDATED.labels(result="valid" if valid else "invalid").inc()
    if (before.status if before else None) != (after.status if after else None):
        if valid:
            kopf.info(body, reason="Validated", message="Validated the scenario")
        else:
            message = after.message if after else ""
            kopf.warn(body, reason="ValidationFailed", message=f"Scenario is invalid: {message}")
    HANDLER_RUNS.labels(resource="scenarios", handler="validate", outcome="ok").inc()
