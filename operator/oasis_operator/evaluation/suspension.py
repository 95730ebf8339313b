"""`spec.suspend`: an evaluation held, or stopped and held, as a suspended Job is; resumed once it is false.

As for a Job: a suspended evaluation starts nothing; suspending a running one stops it (its scenarios
cancelled, their sandboxes torn down, nothing half-judged is stored: the same path as a Kueue eviction)
and unsuspending it resumes it from its status, the scenarios already judged kept. A finished evaluation
is not affected. The condition `Suspended` says which it is (True: `Suspended`; False: `Resumed`), and
Progressing is False while it is held (kstatus: Current, at rest as asked).

With the label `kueue.x-k8s.io/queue-name` the evaluation's Workload is deactivated while it is held
(`spec.active: false`, so Kueue evicts it and its quota is free; marked with `SUSPENDED_ANNOTATION`) and
activated again on resume, so it queues for admission again. A Workload someone else deactivated is left
as it is. MultiKueue's copy in a worker cluster (its Workload prebuilt by MultiKueue) and the manager's
object are not suspended here: Kueue's own `Workload.spec.active` is the way there (docs/kueue.md).

`suspend` is the one field of a started run's spec that can change: toggling it is not a spec edit
(no SpecFrozen). The run's frozen generation (`status.runGeneration`) follows such a toggle when the rest
of the spec is what the run froze (`same_run_spec`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.kueue_workload import Admission, admission_of
from oasis_operator.evaluation.queueing import KueueGate, Refused
from oasis_operator.evaluation.start import Notify
from oasis_operator.evaluation.store import DocumentError, DocumentStore
from oasis_operator.kube import request
from oasis_operator.models.crd import (
    ConditionStatus,
    EvaluationRef,
    OASISEvaluationSpec,
    OASISEvaluationStatus,
    Phase,
)
from oasis_operator.status.conditions import SPEC_FROZEN
from oasis_operator.status.evaluation import StatusUnreadableError, read_status
from oasis_operator.status.writer import StatusWriter

log = logging.getLogger(__name__)
T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
SUSPENDED = "Suspended"
SUSPENDED_ANNOTATION = f"{API_GROUP}/suspended"
"""On a Workload the operator deactivated because its evaluation is suspended (activated again on resume)."""
MERGE = "application/merge-patch+json"
POLL_SECONDS = 1.0
# How long a deactivated Workload may take to show Kueue's eviction before its quota is given back anyway.
EVICTION_WAIT_SECONDS = 30.0
Start = Callable[[], Coroutine[Any, Any, OASISEvaluationStatus]]


def is_suspended(body: Mapping[str, Any]) -> bool:
    """`spec.suspend` is true."""
    return (body.get("spec") or {}).get("suspend") is True


def _without_suspend(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in spec.items() if key != "suspend"}


def only_suspend_changed(diff: Iterable[Sequence[Any]]) -> bool:
    """Every change of a kopf diff of the spec (`field="spec"`: paths relative to it, or from the root)
    is `suspend`, and there is at least one."""
    paths = [tuple(change[1]) for change in diff]
    relative = [path[1:] if path[:1] == ("spec",) else path for path in paths]
    return bool(relative) and all(path == ("suspend",) for path in relative)


def same_run_spec(frozen: str, spec: Mapping[str, Any]) -> bool:
    """The spec (as the object has it) is the run's frozen one (`spec.json` of its run set) but for
    `suspend`: both read through the model, as the run stored its own."""
    try:
        stored = json.loads(frozen)
        current = OASISEvaluationSpec.model_validate(dict(spec)).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        again = OASISEvaluationSpec.model_validate(stored).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    except (ValueError, ValidationError):
        return False
    return _without_suspend(current) == _without_suspend(again)


class Suspension:
    """One evaluation's `spec.suspend`, around its run; `body` is kopf's live view of the evaluation."""

    def __init__(
        self,
        api: ApiClient,
        body: Mapping[str, Any],
        notify: Notify,
        gate: KueueGate | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.api = api
        self.body = body
        self.owner = EvaluationRef.of(body)
        self.notify = notify
        self.gate = gate
        self.poll_seconds = poll_seconds

    # --- API calls ----------------------------------------------------------------------------------
    def _path(self) -> str:
        where = f"namespaces/{self.owner.namespace}/oasisevaluations/{self.owner.name}"
        return f"/apis/{API_GROUP}/{API_VERSION}/{where}"

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        return await asyncio.to_thread(request, self.api, method, path, body, None, MERGE)

    async def fresh(self) -> dict[str, Any]:
        """The evaluation as stored now (kopf's view may lag behind the last status write)."""
        found: dict[str, Any] = await self._call("GET", self._path())
        return found

    # --- the frozen generation ----------------------------------------------------------------------
    async def follow_generation(self) -> dict[str, Any]:
        """Let `status.runGeneration` follow a `suspend` toggle when the rest of the spec is the run's
        frozen one (and drop a SpecFrozen the toggle raised); the evaluation as stored after. Called only
        while no run of this evaluation is in flight (its writer holds the status whole)."""
        current = await self.fresh()
        status = current.get("status") or {}
        run_generation = status.get("runGeneration")
        generation = (current.get("metadata") or {}).get("generation")
        if run_generation is None or generation is None or run_generation == generation:
            return current
        try:
            files = await asyncio.to_thread(
                DocumentStore(self.api).read, self.owner.namespace, self.owner.uid, "run"
            )
        except (ApiException, DocumentError) as exc:
            log.warning("cannot read the run's frozen spec to compare: %s", exc)
            return current
        if "spec.json" not in files or not same_run_spec(files["spec.json"], current.get("spec") or {}):
            return current  # a real edit as well: SpecFrozen stands
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != SPEC_FROZEN]
        patch = {"status": {"runGeneration": generation, "conditions": conditions}}
        await self._call("PATCH", self._path() + "/status", patch)
        return await self.fresh()

    # --- the condition ------------------------------------------------------------------------------
    async def _say(self, held: bool, message: str) -> None:
        current = await self.follow_generation()
        raw = dict(current.get("status") or {})
        try:
            status = read_status(raw)
        except StatusUnreadableError:
            return  # the run itself says so, once it starts
        writer = StatusWriter(
            self.api,
            self.owner,
            status,
            lambda: (current.get("metadata") or {}).get("generation"),
            stored=raw,
        )
        if held:
            writer.set_condition(SUSPENDED, T, "Suspended", message)
            writer.set_condition("Progressing", F, "Suspended", message)
            writer.set_condition("Ready", F, "Suspended", "no verdict yet: the evaluation is suspended")
            if status.runGeneration is None:
                writer.set_phase(Phase.PENDING)
        else:
            writer.set_condition(SUSPENDED, F, "Resumed", message)
            writer.set_condition("Progressing", T, "Resumed", message)
        try:
            await writer.write()
        finally:
            await writer.close()

    # --- the Workload -------------------------------------------------------------------------------
    async def _workload(self) -> dict[str, Any] | None:
        if self.gate is None:
            return None
        try:
            return await self.gate.read()
        except Refused:
            return None  # no Workload of ours (Kueue gone, or the name is another's)

    async def _deactivate(self) -> None:
        """Deactivate the Workload (Kueue evicts it) and give its quota back once the run has stopped."""
        workload = await self._workload()
        if workload is None or self.gate is None:
            return
        if (workload.get("spec") or {}).get("active", True):
            patch = {"metadata": {"annotations": {SUSPENDED_ANNOTATION: "true"}}, "spec": {"active": False}}
            await self.gate.patch(patch)
        waited = 0.0
        while True:
            workload = await self._workload()
            if workload is None:
                return
            view = admission_of(workload)
            if view.admission is not Admission.ADMITTED or waited >= EVICTION_WAIT_SECONDS:
                break
            await asyncio.sleep(self.poll_seconds)
            waited += self.poll_seconds
        await self.gate.release(workload, "the evaluation is suspended (spec.suspend): its scenarios stopped")

    async def _activate(self) -> None:
        """Activate again a Workload deactivated for the suspension (only one marked so)."""
        workload = await self._workload()
        if workload is None or self.gate is None:
            return
        if (workload.get("metadata") or {}).get("annotations", {}).get(SUSPENDED_ANNOTATION) is None:
            return
        await self.gate.patch(
            {"metadata": {"annotations": {SUSPENDED_ANNOTATION: None}}, "spec": {"active": True}}
        )

    # --- the loop -----------------------------------------------------------------------------------
    async def _until(self, held: bool) -> None:
        # kopf updates the body in place as events arrive; there is no event object to await instead.
        while is_suspended(self.body) != held:  # noqa: ASYNC110
            await asyncio.sleep(self.poll_seconds)

    async def _hold(self, was_running: bool) -> None:
        message = "spec.suspend is true: nothing runs; set it to false to resume"
        if was_running:
            message = "spec.suspend is true: its scenarios were stopped; set it to false to resume"
        await self._deactivate()
        await self._say(True, message)
        self.notify("Normal", "Suspended", message)
        await self._until(False)
        await self._activate()
        resumed = "spec.suspend is false: the evaluation goes on from its status"
        await self._say(False, resumed)
        self.notify("Normal", "Resumed", resumed)

    async def run(self, start: Start) -> OASISEvaluationStatus:
        """`start` (the run, through Kueue when labelled) until it is over, held while suspended."""
        was_running = False
        while True:
            if is_suspended(self.body):
                await self._hold(was_running)
            await self.follow_generation()
            running: asyncio.Task[OASISEvaluationStatus] = asyncio.create_task(start())
            watching = asyncio.create_task(self._until(True))
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
                return running.result()
            log.info("suspended: stopping its scenarios")
            self.notify("Normal", "Suspending", "spec.suspend is true: stopping its scenarios")
            running.cancel()
            results = await asyncio.gather(running, return_exceptions=True)
            if isinstance(results[0], OASISEvaluationStatus):
                return results[0]  # it was over before the cancellation reached it
            was_running = True


def suspension(
    api: ApiClient, body: Mapping[str, Any], notify: Notify, gate: KueueGate | None
) -> Suspension | None:
    """The evaluation's suspension handling; None for MultiKueue's copy (its Workload is MultiKueue's)."""
    if gate is not None and gate.prebuilt:
        return None
    return Suspension(api, body, notify, gate)
