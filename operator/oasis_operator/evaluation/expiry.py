"""Bounded history: a finished evaluation is deleted with its documents once its TTL has passed.

`spec.ttlSecondsAfterFinished`, else the operator's default (`OASIS_TTL_SECONDS_AFTER_FINISHED`, chart
value `operator.ttlSecondsAfterFinished`), counts from `status.completedAt` of a run that finished
(Completed, Aborted or Failed), as a Job's TTL does. Neither set: the evaluation is kept. When it is due,
the evaluation's document ConfigMaps (run state, evidence, verdict, report: every ConfigMap labelled with
its uid) are deleted, then the evaluation itself (its sandboxes are torn down by the delete handler). The
ConfigMaps are owned by the evaluation, so the garbage collector would remove them too; deleting them here
does not depend on a garbage collector running.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import EvaluationRef, Phase

log = logging.getLogger(__name__)
RETRY_SECONDS = 30.0
FINISHED = frozenset({Phase.COMPLETED.value, Phase.ABORTED.value, Phase.FAILED.value})


def ttl_of(spec: Mapping[str, Any], default: int | None) -> int | None:
    """The evaluation's TTL in seconds: its own, else the operator's default; None keeps it."""
    own = spec.get("ttlSecondsAfterFinished")
    return int(own) if isinstance(own, int) and not isinstance(own, bool) else default


def _parse(stamp: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def seconds_until_expiry(status: Mapping[str, Any], ttl: int | None, now: datetime) -> float | None:
    """Seconds until a finished evaluation is due (0 when it is); None when it is kept or not finished."""
    if ttl is None or status.get("phase") not in FINISHED:
        return None
    completed = _parse(str(status.get("completedAt") or ""))
    if completed is None:
        return None
    return max(0.0, completed.timestamp() + ttl - now.timestamp())


def delete_evaluation(api: ApiClient, owner: EvaluationRef) -> int:
    """Delete the evaluation's document ConfigMaps, then the evaluation (this uid only); how many
    ConfigMaps were deleted."""
    query = {"labelSelector": f"{EVALUATION_UID_LABEL}={owner.uid}"}
    items = request(api, "GET", resource_path("ConfigMap", owner.namespace), query=query)["items"]
    for item in items:
        try:
            request(api, "DELETE", resource_path("ConfigMap", owner.namespace, item["metadata"]["name"]))
        except ApiException as exc:
            if exc.status != 404:
                raise
    path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{owner.namespace}/oasisevaluations/{owner.name}"
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": owner.uid}}
    try:
        request(api, "DELETE", path, body)
    except ApiException as exc:
        if exc.status not in (404, 409):  # gone already, or another object of that name now
            raise
    return len(items)


async def expire_when_due(
    api: ApiClient,
    owner: EvaluationRef,
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    default: int | None,
) -> bool:
    """Wait until the finished evaluation's TTL has passed, then delete it; False at once when it is kept."""
    ttl = ttl_of(spec, default)
    wait = seconds_until_expiry(status, ttl, datetime.now(UTC))
    if wait is None:
        return False
    await asyncio.sleep(wait)
    while True:
        try:
            removed = await asyncio.to_thread(delete_evaluation, api, owner)
            break
        except ApiException as exc:  # the host API server refused or is away: try again later
            log.warning(
                "could not delete the expired evaluation %s (HTTP %s: %s); retrying in %ss",
                owner.key, exc.status, exc.reason, RETRY_SECONDS,
            )  # fmt: skip
            await asyncio.sleep(RETRY_SECONDS)
    log.info(
        "deleted the finished evaluation %s after its TTL ttlSecondsAfterFinished=%s configmaps=%d",
        owner.key, ttl, removed,
    )  # fmt: skip
    return True
