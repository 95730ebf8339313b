"""Kubernetes-style status conditions of both kinds, as `Condition` models (pure).

`set_condition` is the one way a condition changes: it keeps `lastTransitionTime` while the status stays
the same, so the time says when the condition last flipped, not when it was last written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from oasis_operator.models.crd import Condition, ConditionStatus, Phase

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


# kstatus (sigs.k8s.io/cli-utils/pkg/kstatus): "abnormal-true" conditions a generic tool reads without
# knowing the kind. Reconciling=True: not done yet (InProgress); Stalled=True: cannot go on without a
# change (Failed); neither True and status.observedGeneration == metadata.generation: Current.
RECONCILING = "Reconciling"
STALLED = "Stalled"
PROGRESSING = "Progressing"
READY = "Ready"
# Phases that end a run without it having gone its whole way: the spec or a fault stopped it.
STALLED_PHASES = frozenset({Phase.FAILED, Phase.ABORTED})


def with_kstatus(
    existing: Sequence[Condition], phase: Phase | None, generation: int | None, now: str
) -> list[Condition]:
    """The conditions with Reconciling and Stalled set from the run's own (kept consistent with them).

    Reconciling follows Progressing: True (same reason and message) while a run is queued or under way.
    Stalled is True once the phase is Failed (an invalid spec, a missing Secret, an unreachable agent:
    fixed by an edit, which starts the run again) or Aborted (a fault stopped the run; its verdict is
    partial), with Ready's reason and message; False otherwise. Both carry the generation they describe.
    Before the run wrote Progressing there is nothing to derive: the conditions are returned unchanged.
    """
    progressing = get_condition(existing, PROGRESSING)
    if progressing is None:
        return list(existing)
    under_way = progressing.status is ConditionStatus.TRUE
    conditions = set_condition(
        existing,
        type=RECONCILING,
        status=ConditionStatus.TRUE if under_way else ConditionStatus.FALSE,
        reason=progressing.reason,
        message=progressing.message if under_way else "nothing is under way",
        generation=generation,
        now=now,
    )
    ready = get_condition(existing, READY)
    stalled = phase in STALLED_PHASES and not under_way
    if stalled and ready is not None:
        reason, message = ready.reason, ready.message
    else:
        reason = (phase or Phase.PENDING).value
        message = "the run finished" if phase is Phase.COMPLETED else "the run can go on"
    return set_condition(
        conditions,
        type=STALLED,
        status=ConditionStatus.TRUE if stalled else ConditionStatus.FALSE,
        reason=reason,
        message=message,
        generation=generation,
        now=now,
    )
