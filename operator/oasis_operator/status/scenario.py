"""The status of a Scenario resource as a `ScenarioStatus` model, and the patch that writes it (pure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from oasis_operator.models.crd import Condition, ConditionStatus, ScenarioSpec, ScenarioStatus
from oasis_operator.models.errors import validation_problems
from oasis_operator.models.profile import Finding
from oasis_operator.status.conditions import STALLED, set_condition

# A validator takes a parsed scenario and returns findings; the profile validator plugs in here.
ScenarioValidator = Callable[[ScenarioSpec], list[Finding]]


def structural_findings(spec: Mapping[str, Any]) -> tuple[ScenarioSpec | None, list[Finding]]:
    """Parse a Scenario spec; each schema problem becomes an error finding with its field path."""
    try:
        return ScenarioSpec.model_validate(spec), []
    except ValidationError as exc:
        problems = validation_problems(exc, prefix="spec")
        return None, [Finding(severity="error", rule="SCN-SCHEMA", path=p, message=m) for p, m in problems]


def _in_resource(finding: Finding) -> Finding:
    """Profile findings name scenario fields; in a Scenario resource they live under `spec`."""
    if finding.path.startswith("spec"):
        return finding
    return finding.model_copy(update={"path": f"spec.{finding.path}" if finding.path else "spec"})


def scenario_status(
    spec: Mapping[str, Any],
    generation: int | None,
    current: Sequence[Condition],
    now: str,
    validator: ScenarioValidator | None = None,
) -> ScenarioStatus:
    """The status of a Scenario resource: findings, a `Valid` condition summarising them, and `Stalled`
    (kstatus) True while the scenario is invalid.

    `current` is the resource's conditions as they stand (their transition times are kept).
    """
    parsed, findings = structural_findings(spec)
    if parsed is not None and validator is not None:
        findings.extend(_in_resource(f) for f in validator(parsed))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else ""
        status, reason, message = (
            ConditionStatus.FALSE,
            "ValidationFailed",
            f"{first.path}: {first.message}{more}",
        )
    else:
        warnings = len(findings)
        status, reason = ConditionStatus.TRUE, "Validated"
        message = "scenario is valid" + (f" ({warnings} warnings or notes)" if warnings else "")
    conditions = set_condition(
        current,
        type="Valid",
        status=status,
        reason=reason,
        message=message,
        generation=generation,
        now=now,
    )
    # kstatus: an invalid scenario cannot be used until it is edited (Stalled, the same words as Valid).
    invalid = status is ConditionStatus.FALSE
    conditions = set_condition(
        conditions,
        type=STALLED,
        status=ConditionStatus.TRUE if invalid else ConditionStatus.FALSE,
        reason=reason,
        message=message if invalid else "the scenario can be used",
        generation=generation,
        now=now,
    )
    return ScenarioStatus(
        observedGeneration=generation,
        conditions=conditions,
        findings=findings,
        scenarioId=parsed.id if parsed is not None else None,
        classification=parsed.classification if parsed is not None else None,
    )


def scenario_wire(status: ScenarioStatus) -> dict[str, Any]:
    """The status as the resource carries it; a field left unset (scenarioId of an unparsable spec) is
    not sent, so a merge patch keeps what an earlier generation wrote there."""
    wire: dict[str, Any] = status.model_dump(mode="json", exclude_none=True)
    return wire


def status_patch(current: Mapping[str, Any], desired: ScenarioStatus) -> dict[str, Any] | None:
    """The status patch that takes `current` (the stored status) to `desired`; None when nothing changes."""
    wire = scenario_wire(desired)
    return wire if any(current.get(k) != v for k, v in wire.items()) else None
