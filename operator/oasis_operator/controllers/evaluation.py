"""OASISEvaluation handlers. For now: accept the object and report it as Pending (runs come later)."""

from __future__ import annotations

from typing import Any

import kopf

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.conditions import now_rfc3339
from oasis_operator.controllers.settings import HANDLER_LIMITS
from oasis_operator.metrics import EVALUATION_PHASE_TRANSITIONS, HANDLER_RUNS
from oasis_operator.status import evaluation_accept_status, status_changed

RESOURCE = (API_GROUP, API_VERSION, "oasisevaluations")


@kopf.on.resume(*RESOURCE, **HANDLER_LIMITS)
@kopf.on.create(*RESOURCE, **HANDLER_LIMITS)
def accept(
    body: kopf.Body, spec: kopf.Spec, status: kopf.Status, meta: kopf.Meta, patch: kopf.Patch, **_: Any
) -> None:
    """Validate the spec; a valid one becomes Pending with a Progressing condition."""
    desired, error = evaluation_accept_status(dict(spec), meta.get("generation"), dict(status), now_rfc3339())
    if status_changed(status, desired):
        patch.status.update(desired)
    if status.get("phase") != desired["phase"]:
        EVALUATION_PHASE_TRANSITIONS.labels(phase=desired["phase"]).inc()
        if error:
            kopf.warn(body, reason="InvalidSpec", message=f"Refused the evaluation: {error}")
        else:
            kopf.info(body, reason="Accepted", message=f"Accepted the evaluation; phase {desired['phase']}")
    if error:
        HANDLER_RUNS.labels(resource="oasisevaluations", handler="accept", outcome="invalid").inc()
        raise kopf.PermanentError(f"invalid spec: {error}")
    HANDLER_RUNS.labels(resource="oasisevaluations", handler="accept", outcome="ok").inc()
