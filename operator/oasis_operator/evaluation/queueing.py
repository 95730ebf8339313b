"""An OASISEvaluation admitted by Kueue: its Workload made, waited on, watched while it runs, finished.

The pure half (what the Workload is, what its conditions mean) is `evaluation.kueue_workload`; here are
the API calls and the loop around one run (`KueueGate.run`):

1. Make the Workload unless it exists (nothing when Kueue is not installed or the priority class is
   missing: a `QueuedByKueue` condition says so and the evaluation waits for the fix).
2. Wait for admission. Meanwhile the evaluation is `Pending` with `QueuedByKueue` True and Kueue's own
   words (`Inadmissible` names the missing LocalQueue); nothing is started.
3. Run. The Workload is read every `OASIS_KUEUE_POLL_SECONDS`: evicted (preempted, its queue stopped)
   the run is cancelled, which tears its sandboxes down and stores nothing half-judged; the quota is given
   back and the evaluation waits to be admitted again, then resumes from its status, the finished
   scenarios kept. A queue label changed after admission is not honoured: `QueueLabelChanged` says so.
4. Over: the Workload is marked `Finished` with the verdict. A run refused before it started (a bad spec)
   deletes its Workload instead, so a spec that is never fixed holds no quota.

In a MultiKueue worker cluster the evaluation is MultiKueue's copy of the manager's, labelled
`kueue.x-k8s.io/prebuilt-workload-name`: its Workload is the one MultiKueue made there (never one of the
operator's, never deleted by it); a run refused before it started marks that Workload Finished, so the
manager's object gets the refusal in its status. The manager side is `evaluation.multikueue`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.kueue_workload import (
    KUEUE_GROUP,
    KUEUE_VERSION,
    PRIORITY_CLASSES,
    QUEUE_LABEL,
    WORKLOADS,
    Admission,
    Priority,
    SlotRequests,
    WorkloadView,
    admission_of,
    build_workload,
    finished_condition,
    prebuilt_workload_of,
    priority_class_of,
    queue_of,
    released_status,
    workload_name,
)
from oasis_operator.evaluation.start import Notify
from oasis_operator.kube import is_transient, request, served_versions
from oasis_operator.models.crd import ConditionStatus, EvaluationRef, OASISEvaluationStatus, Phase
from oasis_operator.settings import OperatorSettings
from oasis_operator.status.conditions import now_rfc3339
from oasis_operator.status.evaluation import StatusUnreadableError, read_status
from oasis_operator.status.writer import StatusWriter

log = logging.getLogger(__name__)
T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
QUEUED = "QueuedByKueue"
LABEL_CHANGED = "QueueLabelChanged"
MERGE = "application/merge-patch+json"
# Runs (or resumes) the evaluation given its object as the API server has it now; its final status.
Run = Callable[[dict[str, Any]], Coroutine[Any, Any, OASISEvaluationStatus]]


@dataclass(frozen=True)
class QueueSettings:
    """The operator's Kueue settings (`OASIS_KUEUE_*`)."""

    slot: SlotRequests
    poll_seconds: float = 2.0


class Refused(Exception):  # noqa: N818 - a state the user fixes, not an error of ours
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _path(namespace: str, plural: str = WORKLOADS, name: str | None = None, cluster: bool = False) -> str:
    root = f"/apis/{KUEUE_GROUP}/{KUEUE_VERSION}"
    where = f"{root}/{plural}" if cluster else f"{root}/namespaces/{namespace}/{plural}"
    return f"{where}/{name}" if name else where


class KueueGate:
    """One labelled evaluation's way through Kueue; `body` is kopf's live view of the evaluation."""

    def __init__(
        self, api: ApiClient, settings: QueueSettings, body: Mapping[str, Any], notify: Notify
    ) -> None:
        self.api = api
        self.settings = settings
        self.body = body
        self.owner = EvaluationRef.of(body)
        self.notify = notify
        # MultiKueue's copy in a worker cluster comes with its Workload; anywhere else the operator's own.
        self.prebuilt = prebuilt_workload_of(self._labels())
        self.name = self.prebuilt or workload_name(self.owner)
        self.queue = queue_of(self._labels()) or ""

    def _labels(self) -> Mapping[str, str]:
        return (self.body.get("metadata") or {}).get("labels") or {}

    # --- API calls ----------------------------------------------------------------------------------
    async def _call(self, method: str, path: str, body: Any = None, content_type: str = MERGE) -> Any:
        return await asyncio.to_thread(request, self.api, method, path, body, None, content_type)

    def _evaluation_path(self) -> str:
        where = f"namespaces/{self.owner.namespace}/oasisevaluations/{self.owner.name}"
        return f"/apis/{API_GROUP}/{API_VERSION}/{where}"

    async def read(self) -> dict[str, Any] | None:
        """The evaluation's Workload, None when there is none (KueueNotInstalled without the API)."""
        try:
            found: dict[str, Any] = await self._call("GET", _path(self.owner.namespace, name=self.name))
        except ApiException as exc:
            if exc.status != 404:
                raise
            if KUEUE_VERSION not in await asyncio.to_thread(served_versions, self.api, KUEUE_GROUP):
                raise Refused(
                    "KueueNotInstalled",
                    f"the label {QUEUE_LABEL} asks for Kueue, but this cluster serves no "
                    f"{KUEUE_GROUP}/{KUEUE_VERSION} Workloads: install Kueue (docs/kueue.md) or remove "
                    "the label",
                ) from None
            return None
        if self.prebuilt:
            return found  # MultiKueue's, made for this copy (it owns no reference to it)
        owners = (found.get("metadata") or {}).get("ownerReferences") or []
        if not any(ref.get("uid") == self.owner.uid for ref in owners):
            raise Refused(
                "WorkloadNameTaken",
                f"a Workload named {self.name} exists that this evaluation does not own (an earlier "
                "evaluation's, on its way out, or another's): it waits until that one is gone",
            )
        return found

    async def _priority(self) -> Priority | None:
        name = priority_class_of(self._labels())
        if name is None:
            return None
        try:
            found = await self._call("GET", _path("", PRIORITY_CLASSES, name, cluster=True))
        except ApiException as exc:
            if exc.status != 404:
                raise
            raise Refused(
                "PriorityClassNotFound",
                f"the label kueue.x-k8s.io/priority-class names WorkloadPriorityClass {name!r}, which "
                "does not exist: create it, or fix or remove the label",
            ) from None
        return Priority(name=name, value=int(found.get("value") or 0))

    async def ensure(self) -> dict[str, Any]:
        """The Workload, made now unless it exists (never for an evaluation being deleted)."""
        found = await self.read()
        if found is not None:
            return found
        if self.prebuilt:
            raise Refused(
                "PrebuiltWorkloadNotFound",
                f"the label kueue.x-k8s.io/prebuilt-workload-name names Workload {self.prebuilt!r}, which "
                "does not exist: MultiKueue makes it before its copy of the evaluation; remove the label "
                "to let the operator make its own",
            )
        if (self.body.get("metadata") or {}).get("deletionTimestamp"):
            raise Refused("Deleting", "the evaluation is being deleted: no Workload is made for it")
        priority = await self._priority()
        parallelism = int((self.body.get("spec") or {}).get("parallelism") or 1)
        workload = build_workload(self.owner, self.queue, parallelism, self.settings.slot, priority)
        try:
            made: dict[str, Any] = await self._call(
                "POST", _path(self.owner.namespace), workload, "application/json"
            )
        except ApiException as exc:
            if exc.status == 409:  # made meanwhile (read again), or another's of the same name (refused)
                again = await self.read()
                if again is None:
                    raise Refused("WorkloadNameTaken", f"Workload {self.name} exists already") from None
                return again
            if exc.status in (400, 422):
                raise Refused(
                    "WorkloadRejected", f"Kueue refused the evaluation's Workload: {exc.body}"
                ) from None
            raise
        self.notify("Normal", "WorkloadCreated", f"Created Workload {self.name} in LocalQueue {self.queue}")
        return made

    async def release(self, workload: Mapping[str, Any], message: str) -> None:
        """Give an evicted Workload's quota back (its scenarios have stopped)."""
        patch = {"status": released_status(workload, message, now_rfc3339())}
        with contextlib.suppress(ApiException):
            await self._call("PATCH", _path(self.owner.namespace, name=self.name) + "/status", patch)

    async def finish(self, status: OASISEvaluationStatus) -> None:
        """Mark the Workload Finished with the verdict (once; compare, then write)."""
        try:
            workload = await self.read()
        except Refused:  # Kueue gone, or the Workload is not ours: nothing of ours to finish
            return
        if workload is None or admission_of(workload).admission is Admission.FINISHED:
            return
        summary = status.summary
        safety = summary.safety if summary is not None else None
        succeeded = status.phase is Phase.COMPLETED
        message = f"evaluation {status.phase.value if status.phase else 'over'}" + (
            f", safety {safety}" if safety else ""
        )
        conditions = [
            c for c in (workload.get("status") or {}).get("conditions") or [] if c.get("type") != "Finished"
        ]
        generation = (workload.get("metadata") or {}).get("generation")
        conditions.append(finished_condition(succeeded, message, generation, now_rfc3339()))
        path = _path(self.owner.namespace, name=self.name) + "/status"
        await self._call("PATCH", path, {"status": {"conditions": conditions}})
        self.notify("Normal", "WorkloadFinished", f"Marked Workload {self.name} Finished: {message}")

    async def patch(self, patch: Mapping[str, Any]) -> None:
        """Merge-patch the Workload (its `spec.active`, for a suspended evaluation)."""
        await self._call("PATCH", _path(self.owner.namespace, name=self.name), patch)

    async def delete(self) -> None:
        """Remove the Workload (a run refused before it started holds no quota while it waits)."""
        with contextlib.suppress(ApiException):
            await self._call("DELETE", _path(self.owner.namespace, name=self.name))

    # --- the evaluation's conditions ----------------------------------------------------------------
    async def _say(
        self,
        type_: str,
        status: ConditionStatus,
        reason: str,
        message: str,
        *,
        pending: bool,
        body: Mapping[str, Any] | None = None,
    ) -> None:
        """Set one condition on the evaluation (written only when it changed); `body`: the object as
        read (default: kopf's view)."""
        raw = dict(((self.body if body is None else body).get("status")) or {})
        try:
            current = read_status(raw)
        except StatusUnreadableError:
            return  # the run itself says so, once it starts
        writer = StatusWriter(
            self.api,
            self.owner,
            current,
            lambda: (self.body.get("metadata") or {}).get("generation"),
            stored=raw,
        )
        writer.set_condition(type_, status, reason, message)
        if pending and current.runGeneration is None:
            writer.set_phase(Phase.PENDING)
            writer.set_condition("Ready", F, "Pending", "no verdict yet")
            writer.set_condition("Progressing", T, QUEUED, message)
        try:
            await writer.write()
        finally:
            await writer.close()

    # --- the loop -----------------------------------------------------------------------------------
    async def admitted(self) -> WorkloadView:
        """Wait until Kueue admits the evaluation; the conditions say why it waits meanwhile."""
        said: tuple[str, str] | None = None
        while True:
            try:
                view = admission_of(await self.ensure())
                if view.admission is Admission.ADMITTED:
                    return view
                if view.admission is Admission.INADMISSIBLE:
                    reason, message = "Inadmissible", f"Kueue: {view.message}; fix the queue or the label"
                else:
                    reason, message = "Waiting", f"waiting for Kueue to admit it in LocalQueue {self.queue}"
                    if view.admission is Admission.EVICTED:
                        reason, message = "Evicted", f"evicted by Kueue ({view.reason}: {view.message}); " \
                            "resumes when admitted again"  # fmt: skip
            except Refused as refused:
                reason, message = refused.reason, str(refused)
            if said != (reason, message):
                await self._say(QUEUED, T, reason, message, pending=True)
                if said is None or said[0] != reason:
                    kind = "Normal" if reason in ("Waiting", "Evicted") else "Warning"
                    self.notify(kind, reason, message)
                said = (reason, message)
            await asyncio.sleep(self.settings.poll_seconds)

    async def _label_check(self, announced: bool, body: Mapping[str, Any] | None = None) -> bool:
        """Keep `QueueLabelChanged` true to the label (level-based: the run's own status writes replace
        the conditions list, so it is set again until it holds); True while the label differs. The
        Warning event goes out once (`announced`)."""
        source = self.body if body is None else body
        wanted = queue_of((source.get("metadata") or {}).get("labels")) or ""
        if wanted != self.queue and body is None:
            # Written beside the run's own writer: from the object as stored now, not kopf's view, so
            # no newer condition of the run's is replaced by an older one.
            source = await self._call("GET", self._evaluation_path())
        if wanted != self.queue:
            message = (
                f"the label kueue.x-k8s.io/queue-name changed from {self.queue!r} to {wanted!r} "
                f"after Kueue admitted the evaluation: not honoured, it stays in {self.queue!r}. "
                "Put the label back, or create a new evaluation for another queue"
            )
            await self._say(LABEL_CHANGED, T, "ChangedAfterAdmission", message, pending=False, body=source)
            if not announced:
                self.notify("Warning", "QueueLabelChanged", message)
            return True
        stored = (source.get("status") or {}).get("conditions") or []
        if any(c.get("type") == LABEL_CHANGED and c.get("status") == "True" for c in stored):
            unchanged = "the label names the admitting queue"
            await self._say(LABEL_CHANGED, F, "Unchanged", unchanged, pending=False, body=source)
        return False

    async def evicted(self) -> WorkloadView:
        """Return once Kueue takes the admission back; say so when the queue label changes meanwhile."""
        announced = False
        while True:
            await asyncio.sleep(self.settings.poll_seconds)
            announced = await self._label_check(announced)
            try:
                workload = await self.read()
            except Refused as refused:
                return WorkloadView(Admission.EVICTED, refused.reason, str(refused), self.queue)
            except Exception as exc:
                if is_transient(exc):
                    continue
                raise
            if workload is None:
                return WorkloadView(
                    Admission.EVICTED, "WorkloadDeleted", "the Workload was deleted", self.queue
                )
            view = admission_of(workload)
            if view.admission in (Admission.EVICTED, Admission.WAITING, Admission.INADMISSIBLE):
                return view

    async def run(self, run: Run) -> OASISEvaluationStatus:
        """Admission, then `run` until it is over; evicted, it stops and waits to be admitted again."""
        while True:
            view = await self.admitted()
            await self._say(
                QUEUED, F, "Admitted", f"admitted by Kueue in LocalQueue {view.queue}", pending=False
            )
            self.notify("Normal", "Admitted", f"Kueue admitted the evaluation (Workload {self.name})")
            # The object as stored now (with the condition just written), not kopf's view, which may lag.
            fresh = await self._call("GET", self._evaluation_path())
            running: asyncio.Task[OASISEvaluationStatus] = asyncio.create_task(run(fresh))
            watching = asyncio.create_task(self.evicted())
            try:
                done, _ = await asyncio.wait({running, watching}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                for task in (running, watching):
                    task.cancel()
                await asyncio.gather(running, watching, return_exceptions=True)
                raise
            if running in done:
                watching.cancel()
                await asyncio.gather(watching, return_exceptions=True)
                final: OASISEvaluationStatus = running.result()
                # The object as stored now (kopf's view may lag behind the run's last status write, which
                # may have dropped QueueLabelChanged).
                stored = await self._call("GET", self._evaluation_path())
                await self._label_check(announced=True, body=stored)
                if final.runGeneration is None and not self.prebuilt:
                    await self.delete()  # refused before it started: no quota held while it waits
                else:
                    await self.finish(final)
                return final
            failed = watching.exception()
            if failed is None:
                stop = watching.result()
                log.info("evicted by Kueue: reason=%s message=%s", stop.reason, stop.message)
                self.notify(
                    "Warning",
                    "Evicted",
                    f"Kueue evicted the evaluation ({stop.reason}): stopping its scenarios",
                )
            running.cancel()  # also when watching failed: the run never goes on unwatched
            await asyncio.gather(running, return_exceptions=True)
            if failed is not None:
                raise failed
            try:
                workload = await self.read()
            except Refused:
                workload = None  # no Workload of ours to give back; admitted() says why it waits
            if workload is not None:
                await self.release(workload, f"the evaluation stopped its scenarios after {stop.reason}")


def kueue_gate(
    api: ApiClient, settings: OperatorSettings, body: Mapping[str, Any], notify: Notify
) -> KueueGate | None:
    """The evaluation's way through Kueue when it carries the queue label; None without it."""
    if queue_of((body.get("metadata") or {}).get("labels")) is None:
        return None
    return KueueGate(api, queue_settings(settings), body, notify)


def queue_settings(settings: OperatorSettings) -> QueueSettings:
    """The Kueue part of the operator's settings."""
    slot = SlotRequests(cpu=settings.kueue_slot_cpu, memory=settings.kueue_slot_memory)
    return QueueSettings(slot=slot, poll_seconds=settings.kueue_poll_seconds)


async def forget_workload(api: ApiClient, body: Mapping[str, Any]) -> bool:
    """Delete a deleted evaluation's Workload now (garbage collection would, once the object is gone);
    True if there was one. Without the right to (a chart installed without `kueue.enabled`, an operator
    watching every namespace) or without Kueue, garbage collection is left to do it: the deletion of the
    evaluation never waits on it."""
    labels = (body.get("metadata") or {}).get("labels")
    if queue_of(labels) is None or prebuilt_workload_of(labels) is not None:
        return False  # MultiKueue removes the Workload it made, with the copy
    owner = EvaluationRef.of(body)
    path = _path(owner.namespace, name=workload_name(owner))
    try:
        await asyncio.to_thread(request, api, "DELETE", path)
    except ApiException as exc:
        if exc.status == 403:
            log.warning(
                "cannot delete Workload %s/%s (not granted: chart value kueue.enabled); garbage "
                "collection removes it with the evaluation", owner.namespace, workload_name(owner),
            )  # fmt: skip
        if exc.status in (403, 404):
            return False
        raise
    return True
