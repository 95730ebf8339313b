"""Kubernetes-style status conditions: pure helpers that keep transition times honest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from oasis_operator.models.crd import Condition, ConditionStatus


def now_rfc3339() -> str:
    """The current time as Kubernetes writes it (seconds precision, Z suffix)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    existing: Iterable[Mapping[str, Any]],
    *,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    generation: int | None,
    now: str,
) -> list[dict[str, Any]]:
    """Return the conditions with `type` set; lastTransitionTime changes only when status changes."""
    result: list[dict[str, Any]] = []
    replaced = False
    for raw in existing:
        if raw.get("type") != type:
            result.append(dict(raw))
            continue
        replaced = True
        transition = raw.get("lastTransitionTime") if raw.get("status") == status.value else now
        result.append(_condition(type, status, reason, message, generation, transition or now))
    if not replaced:
        result.append(_condition(type, status, reason, message, generation, now))
    return result


def set_conditions(
    existing: Iterable[Mapping[str, Any]],
    updates: Iterable[tuple[str, ConditionStatus, str, str]],
    generation: int | None,
    now: str,
) -> list[dict[str, Any]]:
    """`set_condition` for each (type, status, reason, message), in order."""
    result = [dict(c) for c in existing]
    for type_, status, reason, message in updates:
        result = set_condition(
            result, type=type_, status=status, reason=reason, message=message, generation=generation, now=now
        )
    return result


def _condition(
    type_: str, status: ConditionStatus, reason: str, message: str, generation: int | None, when: str
) -> dict[str, Any]:
    cond = Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        lastTransitionTime=when,
        observedGeneration=generation,
    )
    return cond.model_dump(mode="json", exclude_none=True)


def get_condition(conditions: Iterable[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)
