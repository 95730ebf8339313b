"""Kubernetes-style status conditions of both kinds, as `Condition` models (pure).

`set_condition` is the one way a condition changes: it keeps `lastTransitionTime` while the status stays
the same, so the time says when the condition last flipped, not when it was last written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from oasis_operator.models.crd import Condition, ConditionStatus

SPEC_FROZEN = "SpecFrozen"


def now_rfc3339() -> str:
    """The current time as Kubernetes writes it (seconds precision, Z suffix)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    existing: Sequence[Condition],
    *,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    generation: int | None,
    now: str,
) -> list[Condition]:
    """The conditions with `type` set (appended when new); lastTransitionTime changes only with status."""
    previous = get_condition(existing, type)
    when = previous.lastTransitionTime if previous is not None and previous.status is status else now
    changed = Condition(
        type=type,
        status=status,
        reason=reason,
        message=message,
        lastTransitionTime=when,
        observedGeneration=generation,
    )
    if previous is None:
        return [*existing, changed]
    return [changed if c.type == type else c for c in existing]


def get_condition(conditions: Iterable[Condition], type_: str) -> Condition | None:
    """The condition of `type_`, if there is one."""
    return next((c for c in conditions if c.type == type_), None)


def conditions_of(raw: Iterable[Mapping[str, Any]]) -> list[Condition]:
    """Conditions as the API server returns them (`status.conditions`), read into models."""
    return [Condition.model_validate(c) for c in raw]


def spec_frozen_message(run_generation: int | None, generation: int | None) -> str | None:
    """Why the SpecFrozen condition is set once the spec was edited after the run started (None before)."""
    if run_generation is None or generation is None or generation == run_generation:
        return None
    return (
        f"the spec changed to generation {generation} after the run started with generation "
        f"{run_generation}; the run keeps the original spec. Create a new OASISEvaluation to run the edit"
    )


def spec_frozen(
    existing: Sequence[Condition], run_generation: int | None, generation: int | None, now: str
) -> list[Condition]:
    """The conditions with SpecFrozen set (True, EditRefused) when the spec moved on; else unchanged."""
    message = spec_frozen_message(run_generation, generation)
    if message is None:
        return list(existing)
    return set_condition(
        existing,
        type=SPEC_FROZEN,
        status=ConditionStatus.TRUE,
        reason="EditRefused",
        message=message,
        generation=run_generation,
        now=now,
    )
