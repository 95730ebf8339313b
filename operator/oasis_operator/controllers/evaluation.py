"""OASISEvaluation handlers: a daemon per evaluation runs it; deletion tears its sandboxes down.

The daemon is kopf's: started for every evaluation when it is created or when the operator starts, and
cancelled when the evaluation is deleted or the operator stops. All the work is in
:class:`~oasis_operator.evaluation.service.EvaluationService`, which resumes from status.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

import kopf

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.controllers import heap
from oasis_operator.controllers.settings import HANDLER_LIMITS, operator_settings
from oasis_operator.environments.runtime import OperatorConfig, RuntimeSetupError, Sandboxes
from oasis_operator.evaluation.cleanup import teardown_evaluation
from oasis_operator.evaluation.expiry import expire_when_due
from oasis_operator.evaluation.kueue_workload import dispatched_by_multikueue
from oasis_operator.evaluation.multikueue import (
    is_multikueue_copy,
    keep_copy_documents,
    keep_manager_workload,
    remove_expired_documents,
)
from oasis_operator.evaluation.queueing import Refused, forget_workload, kueue_gate, queue_settings
from oasis_operator.evaluation.service import TERMINAL, EvaluationService
from oasis_operator.evaluation.suspension import only_suspend_changed, suspension
from oasis_operator.kube import api_client
from oasis_operator.logs import log_context
from oasis_operator.metrics import EVALUATIONS_RUNNING, HANDLER_RUNS
from oasis_operator.models.crd import MANAGED_BY_MULTIKUEUE, EvaluationRef, OASISEvaluationStatus, runs_here
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.provider_api import ProviderApiServer, start_operator_provider_api
from oasis_operator.status.conditions import spec_frozen_message
from oasis_operator.status.evaluation import read_status, spec_edit_patch, to_wire

RESOURCE = (API_GROUP, API_VERSION, "oasisevaluations")
# How long a deleted (or, at shutdown, interrupted) run may take to remove its in-flight sandboxes.
CANCELLATION_TIMEOUT = 120.0
EDIT_POLL_SECONDS = 2.0


@kopf.on.startup(retries=3, backoff=5)
async def start_services(
    memo: kopf.Memo, logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any
) -> None:
    """The sandbox target, the agent gateway and the evaluation service, once per operator process."""
    settings = operator_settings(memo)
    where = "in a cluster" if settings.in_cluster else "outside a cluster"
    given = "set" if settings.command_agents else f"unset, {where}"
    logger.info("command agents: %s (OASIS_COMMAND_AGENTS %s)", settings.command_agents_allowed, given)
    memo.slots = asyncio.Semaphore(settings.max_evaluations)
    if getattr(memo, "profile", None) is None:
        memo.profile = load_profile(default_profile_path(settings.profile_dir))
    sandboxes = Sandboxes(OperatorConfig.from_settings(settings))
    await sandboxes.start()
    memo.sandboxes = sandboxes
    memo.host_api = api_client()
    # Kept MultiKueue documents whose time is up, where the operator watches: each of its namespaces
    # (a namespaced operator may list ConfigMaps only there), else every namespace.
    for namespace in getattr(memo, "namespaces", None) or [None]:
        with contextlib.suppress(Exception):  # never a reason not to start; swept again on deletions
            for name in await asyncio.to_thread(remove_expired_documents, memo.host_api, namespace):
                logger.info("removed kept MultiKueue documents configmap=%s", name)
    try:
        memo.provider_api = await start_operator_provider_api(sandboxes, memo.profile, settings)
    except RuntimeSetupError as exc:
        raise kopf.PermanentError(str(exc)) from exc


@kopf.on.cleanup()
async def stop_services(memo: kopf.Memo, **_: Any) -> None:
    provider_api: ProviderApiServer | None = getattr(memo, "provider_api", None)
    if provider_api is not None:
        await provider_api.stop()
    sandboxes: Sandboxes | None = getattr(memo, "sandboxes", None)
    if sandboxes is not None:
        await sandboxes.stop()


def managed_here(spec: kopf.Spec, **_: Any) -> bool:
    """The `when` filter of every handler: this operator runs the evaluation unless `spec.managedBy`
    names another controller (as for a Job); then it creates nothing, writes no status and adds no
    finalizer."""
    return runs_here(spec.get("managedBy"))


@kopf.daemon(*RESOURCE, cancellation_timeout=CANCELLATION_TIMEOUT, when=managed_here)
async def run_evaluation(body: kopf.Body, meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    """Run (or resume) the evaluation to a terminal phase; returns at once for a finished one."""

    def notify(kind: str, reason: str, message: str) -> None:
        kopf.event(body, type=kind, reason=reason, message=message)

    service = EvaluationService(memo.host_api, memo.profile, memo.sandboxes, notify)
    settings = operator_settings(memo)
    owner, ttl = EvaluationRef.of(body), settings.ttl_seconds_after_finished
    # Labelled `kueue.x-k8s.io/queue-name`: Kueue admits the run first (evaluation.queueing).
    gate = kueue_gate(memo.host_api, settings, body, notify)
    status = dict(body.get("status") or {})
    if status.get("phase") in TERMINAL and status.get("runGeneration") is not None:
        # A finished run: nothing to do until the object goes, or its TTL removes it.
        if gate is not None:  # the operator may have stopped between the verdict and the Workload
            await gate.finish(read_status(status))
        await expire_when_due(memo.host_api, owner, body.get("spec") or {}, status, ttl)
        return

    async def run_once(current: dict[str, Any]) -> OASISEvaluationStatus:
        return await service.run(copy.deepcopy(current), lambda: meta.get("generation"), memo.slots)

    # `spec.suspend` holds it, or stops it and holds it, as for a Job (evaluation.suspension).
    held = suspension(memo.host_api, body, notify, gate)

    async def start() -> OASISEvaluationStatus:
        if gate is not None:
            return await gate.run(run_once)
        return await run_once(await held.fresh() if held is not None else dict(body))

    while True:
        EVALUATIONS_RUNNING.inc()
        try:
            final = await (start() if held is None else held.run(start))
            HANDLER_RUNS.labels(resource="oasisevaluations", handler="run", outcome="ok").inc()
        except asyncio.CancelledError:
            HANDLER_RUNS.labels(resource="oasisevaluations", handler="run", outcome="cancelled").inc()
            raise
        finally:
            EVALUATIONS_RUNNING.dec()
            heap.trim()  # what the run freed goes back to the system, not only to the allocator
        finished = to_wire(final)
        if final.runGeneration is not None:
            await expire_when_due(memo.host_api, owner, body.get("spec") or {}, finished, ttl)
            return
        # Refused before it started: wait for the user to fix the spec, then judge it again. Its TTL
        # (from the refusal) removes it if no fix comes in time; `deleted` is done once it did.
        judged = final.observedGeneration
        spec = body.get("spec") or {}
        deleted = asyncio.create_task(expire_when_due(memo.host_api, owner, spec, finished, ttl))
        try:
            # kopf updates `meta` in place as events arrive; there is no event object to await instead.
            while meta.get("generation") == judged and not (deleted.done() and deleted.result()):  # noqa: ASYNC110
                await asyncio.sleep(EDIT_POLL_SECONDS)
        finally:
            deleted.cancel()
        if deleted.done() and not deleted.cancelled() and deleted.result():
            return


@kopf.on.update(*RESOURCE, field="spec", when=managed_here, **HANDLER_LIMITS)
def refuse_spec_edit(
    body: kopf.Body,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    diff: kopf.Diff,
    **_: Any,
) -> None:
    """A started run keeps its spec; say so on the object instead of silently ignoring the edit. A change
    of `spec.suspend` alone is not an edit: it holds or resumes the run (evaluation.suspension)."""
    if only_suspend_changed(diff):
        if status.get("phase") in TERMINAL and status.get("runGeneration") is not None:
            patch.status["observedGeneration"] = meta.get("generation")  # seen; a finished run stays as it is
        return
    message = spec_frozen_message(status.get("runGeneration"), meta.get("generation"))
    if message is None:
        return
    changed = spec_edit_patch(status, meta.get("generation"))
    if changed is not None:
        patch.status.update(changed)
    kopf.warn(body, reason="SpecFrozen", message=message)


@kopf.on.delete(*RESOURCE, when=managed_here, **HANDLER_LIMITS)
async def tear_down(
    body: kopf.Body,
    meta: kopf.Meta,
    memo: kopf.Memo,
    logger: logging.Logger | logging.LoggerAdapter[Any],
    **_: Any,
) -> None:
    """Remove every sandbox the evaluation still has (in-flight runs clean up after themselves too), and
    its Kueue Workload at once: the quota is free before the object is gone."""
    reference = f"{meta['namespace']}/{meta['name']}"
    with log_context(evaluation=reference):
        if await forget_workload(memo.host_api, body):
            logger.info("deleted the evaluation's Kueue Workload")
        removed = await teardown_evaluation(memo.sandboxes, memo.host_api, meta, reference)
        logger.info("tore down the evaluation's sandboxes count=%d", removed)
        if is_multikueue_copy(meta.get("labels")):
            # MultiKueue deletes its copy once the manager has the verdict: the documents stay readable.
            retention = operator_settings(memo).multikueue_document_retention_seconds
            kept = await keep_copy_documents(memo.host_api, body, retention)
            logger.info("kept the MultiKueue copy's documents count=%d", kept)
            for name in await asyncio.to_thread(remove_expired_documents, memo.host_api, meta["namespace"]):
                logger.info("removed kept MultiKueue documents configmap=%s", name)


def multikueue_manager(spec: kopf.Spec, **_: Any) -> bool:
    """The `when` filter of the manager cluster's handlers: `spec.managedBy` names MultiKueue."""
    return spec.get("managedBy") == MANAGED_BY_MULTIKUEUE


# An event handler, not create/update/resume ones: kopf keeps no state for it (those would write
# `status.kopf`, and MultiKueue owns this object's status) and adds no finalizer. Every event of the object
# (the listing at start included) checks the Workload: compare, then create.
@kopf.on.event(*RESOURCE, when=multikueue_manager)
async def dispatch_to_multikueue(
    body: kopf.Body, spec: kopf.Spec, memo: kopf.Memo, event: kopf.RawEvent, **_: Any
) -> None:
    """Manager cluster: make the evaluation's Workload for MultiKueue to dispatch, and nothing else (a
    worker runs it; MultiKueue copies its status here). No status is written, no finalizer added."""

    def notify(kind: str, reason: str, message: str) -> None:
        kopf.event(body, type=kind, reason=reason, message=message)

    going = event.get("type") == "DELETED" or body.get("metadata", {}).get("deletionTimestamp")
    if going or (body.get("status") or {}).get("phase") in TERMINAL:
        return  # going, or over (its Workload is Finished): nothing to make
    if not dispatched_by_multikueue(spec, body.get("metadata", {}).get("labels")):
        kopf.warn(
            body,
            reason="NoQueue",
            message=f"spec.managedBy is {MANAGED_BY_MULTIKUEUE} but the evaluation has no label "
            "kueue.x-k8s.io/queue-name: nothing runs it; add the label of a LocalQueue whose "
            "ClusterQueue has the MultiKueue admission check (docs/kueue.md)",
        )
        return
    settings = queue_settings(operator_settings(memo))
    try:
        await keep_manager_workload(memo.host_api, settings, body, notify)
    except Refused as refused:
        kopf.warn(body, reason=refused.reason, message=str(refused))  # tried again at its next event
