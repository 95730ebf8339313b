"""The OASISEvaluation status between the model and the wire (pure).

In memory the status is an `OASISEvaluationStatus`. On the wire it is the CRD's camelCase with absent
fields left out: a field is sent once the run has set it (or it was stored), never as a default the run
did not choose, so the object reads as before the model existed. A merge patch keeps what it does not
name, so a field the run clears is sent as null (`merge_patch`). `status.kopf` is kopf's handler
progress: never read into the model, never written by us.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from oasis_operator.models.crd import OASISEvaluationStatus
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.status.conditions import conditions_of, now_rfc3339, spec_frozen

KOPF_KEY = "kopf"


class StatusUnreadableError(ValueError):
    """A stored status the model cannot read; the message names the fields."""


def ours(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stored status without kopf's part."""
    return {k: v for k, v in (raw or {}).items() if k != KOPF_KEY}


def read_status(raw: Mapping[str, Any] | None) -> OASISEvaluationStatus:
    """A stored status (the operator wrote it before a restart) as the model."""
    try:
        return OASISEvaluationStatus.model_validate(ours(raw))
    except ValidationError as exc:
        raise StatusUnreadableError(describe_validation_error(exc, prefix="status")) from None


def to_wire(status: OASISEvaluationStatus) -> dict[str, Any]:
    """The status as the API server stores it: aliases, JSON values, only what was set."""
    wire: dict[str, Any] = status.model_dump(
        mode="json", by_alias=True, exclude_unset=True, exclude_none=True
    )
    wire.pop(KOPF_KEY, None)
    return wire


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386) taking `old` to `new`: `new` whole, null for every key it dropped."""
    patch: dict[str, Any] = {k: None for k in old if k not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = merge_patch(before, value)
        else:
            patch[key] = value
    return patch


def spec_edit_patch(raw: Mapping[str, Any], generation: int | None) -> dict[str, Any] | None:
    """The status patch after an edit of a started run's spec (SpecFrozen set); None when none is due."""
    run_generation = raw.get("runGeneration")
    before = conditions_of(raw.get("conditions") or [])
    after = spec_frozen(before, run_generation, generation, now_rfc3339())
    if after == before:
        return None
    return {
        "conditions": [c.model_dump(mode="json", exclude_none=True) for c in after],
        "observedGeneration": generation,
    }
