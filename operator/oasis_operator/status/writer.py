"""The one writer of an evaluation's status while it runs (merge patches of the whole status).

The writer holds the status as an `OASISEvaluationStatus`; every change goes through one of its typed
methods, and `write` sends the model as the CRD has it (see `status.evaluation`). How a failed write is
retried and what a phase change is counted as are the caller's (`retry`, `on_phase`): the run waits out
a short outage of the host API server so its outcome is not lost to it.

When a write goes out is `status.cadence`'s: a change of the rows alone is coalesced with the changes
that follow it (one write per interval at most), anything else is sent at once, together with whatever
waited. A deferred write runs in a task of the writer's own; `close` (the run's end, its cancellation,
the operator's shutdown) sends what is still pending. A deferred write that failed is raised by the next
`write`, so a failure is never lost either.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from kubernetes.client import ApiClient

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import request
from oasis_operator.models.crd import (
    AgentStatus,
    ConditionStatus,
    EvaluationRef,
    OASISEvaluationStatus,
    Phase,
    ScenarioRow,
)
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.models.verdict_summary import VerdictSummary
from oasis_operator.status.cadence import Cadence, urgent
from oasis_operator.status.conditions import now_rfc3339, set_condition, spec_frozen, with_kstatus
from oasis_operator.status.evaluation import merge_patch, ours, to_wire
from oasis_operator.status.rows import progress

log = logging.getLogger(__name__)
MERGE = "application/merge-patch+json"
# How long `close` may take to send what is pending (a cancelled run must not wait out a host outage).
CLOSE_SECONDS = 10.0
T = TypeVar("T")
Retry = Callable[[Callable[[], Any], str], Awaitable[Any]]


async def _once(call: Callable[[], T], _what: str) -> T:
    return await asyncio.to_thread(call)


class StatusWriter:
    """Holds the status in memory and writes it whole; safe to call from concurrent scenario tasks."""

    def __init__(
        self,
        api: ApiClient,
        owner: EvaluationRef,
        status: OASISEvaluationStatus,
        generation: Callable[[], int | None],
        *,
        stored: Mapping[str, Any] | None = None,
        retry: Retry = _once,
        on_phase: Callable[[Phase], None] | None = None,
        cadence: Cadence | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`status` is the model of `stored`, the status as the API server has it (kopf's part aside)."""
        self.api = api
        where = f"namespaces/{owner.namespace}/oasisevaluations/{owner.name}"
        self.path = f"/apis/{API_GROUP}/{API_VERSION}/{where}/status"
        self._status = status.model_copy(deep=True)
        self._status.kopf = None  # kopf keeps its handler progress in status.kopf: that part is kopf's
        self.generation = generation
        self._retry = retry
        self._on_phase = on_phase
        self._lock = asyncio.Lock()
        self._server = ours(stored) if stored is not None else to_wire(self._status)
        self._written: dict[str, Any] | None = None
        self._phase = status.phase  # the phase last written, for the transition hook
        self._cadence = cadence or Cadence()
        self._clock = clock
        self._sent_at: float | None = None  # when the last write went out (on `clock`)
        self._later: asyncio.Task[None] | None = None  # the deferred write, until it is done
        self._sleeping = False  # the deferred write still waits (cancelling it then loses nothing)
        self._failure: Exception | None = None  # a deferred write's error, for the next `write`

    # --- reading ------------------------------------------------------------------------------------
    @property
    def status(self) -> OASISEvaluationStatus:
        """A copy of the status as it stands in memory (change it through the methods below)."""
        return self._status.model_copy(deep=True)

    @property
    def phase(self) -> Phase | None:
        return self._status.phase

    @property
    def rows(self) -> list[ScenarioRow]:
        """The scenario rows (a new list; replace a row with `set_row`)."""
        return list(self._status.scenarios)

    def wire(self) -> dict[str, Any]:
        """The status as the next write sends it (before SpecFrozen and observedGeneration)."""
        return to_wire(self._status)

    # --- changing -----------------------------------------------------------------------------------
    def set_condition(self, type_: str, status: ConditionStatus, reason: str, message: str) -> None:
        """Set one condition (lastTransitionTime kept while its status stays the same)."""
        generation = self._status.runGeneration or self.generation()
        self._status.conditions = set_condition(
            self._status.conditions,
            type=type_,
            status=status,
            reason=reason,
            message=message,
            generation=generation,
            now=now_rfc3339(),
        )

    def set_phase(self, phase: Phase) -> None:
        self._status.phase = phase

    def start(self, run_generation: int | None, planned: Sequence[ScenarioRow]) -> None:
        """A fresh run: its spec generation frozen, its start time, and none of its scenarios done yet."""
        self._status.phase = Phase.PREFLIGHT
        self._status.runGeneration = run_generation
        self._status.startedAt = now_rfc3339()
        self._status.progress = progress(planned)

    def clear_attempt(self) -> None:
        """Forget an attempt refused before any scenario ran: its rows, gaps, reports, counts and agent."""
        self._status.scenarios = []
        self._status.preflightGaps = []
        self._status.reportConfigMaps = []
        self._status.progress = None
        self._status.summary = None
        self._status.agent = None

    def reopen(self) -> None:
        """Leave the spec unfrozen (no runGeneration) so the next generation is judged afresh."""
        self._status.runGeneration = None
        self._status.startedAt = None

    def finish(self, phase: Phase) -> None:
        """A terminal phase and the time it was reached."""
        self._status.phase = phase
        self._status.completedAt = now_rfc3339()

    def clear_completion(self) -> None:
        self._status.completedAt = None

    def set_rows(self, rows: Sequence[ScenarioRow]) -> None:
        """All rows at once (counts are updated by `count`)."""
        self._status.scenarios = list(rows)

    def set_row(self, index: int, row: ScenarioRow) -> None:
        """Replace one row (counts are updated by `count`, once the row's scenario is over)."""
        self._status.scenarios[index] = row

    def set_timings(self, index: int, timings: PhaseTimings) -> None:
        self.set_row(index, self._status.scenarios[index].model_copy(update={"timings": timings}))

    def count(self) -> None:
        """status.progress from the rows as they stand."""
        self._status.progress = progress(self._status.scenarios)

    def set_agent(self, agent: AgentStatus) -> None:
        self._status.agent = agent

    def set_sandbox_server(self, server: str | None) -> None:
        self._status.sandboxServer = server

    def set_preflight_gaps(self, gaps: list[str]) -> None:
        self._status.preflightGaps = gaps

    def conclude(self, phase: Phase, summary: VerdictSummary, report_config_maps: list[str]) -> None:
        """The run's end: terminal phase, summary, final counts and the report ConfigMaps."""
        self.finish(phase)
        self._status.summary = summary
        self.count()
        self._status.reportConfigMaps = report_config_maps

    # --- writing ------------------------------------------------------------------------------------
    def pending_patch(self) -> dict[str, Any] | None:
        """The merge patch the next write sends, None when nothing changed since the last write.

        Before it is computed, the status observes the current generation, carries the kstatus
        conditions (Reconciling, Stalled: `with_kstatus`) and, once the spec moved on after the run
        started, the SpecFrozen condition.
        """
        prepared = self._prepare()
        return prepared[1] if prepared is not None else None

    def _prepare(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        generation = self.generation()
        now = now_rfc3339()
        frozen = spec_frozen(self._status.conditions, self._status.runGeneration, generation, now)
        derived = with_kstatus(frozen, self._status.phase, generation, now)
        if derived != self._status.conditions:
            self._status.conditions = derived
        self._status.observedGeneration = generation
        wire = to_wire(self._status)
        if wire == self._written:
            return None
        return wire, merge_patch(self._server, wire)

    async def write(self, *, now: bool = False) -> None:
        """Write the status if anything differs from the last write: at once when the change is urgent
        (`status.cadence`) or `now` is set, else within the cadence's interval, with later changes."""
        self._raise_failure()
        async with self._lock:
            prepared = self._prepare()
            if prepared is None:
                return
            is_urgent = now or urgent(self._written, prepared[0])
            wait = self._cadence.delay(self._sent_at, self._clock(), urgent=is_urgent)
            if wait <= 0:
                await self._send(*prepared)
                return
        if self._later is None:
            self._sleeping = True  # from now: a task that has not run yet is still waiting
            self._later = asyncio.get_running_loop().create_task(self._deferred(wait))

    async def flush(self) -> None:
        """Send whatever is pending now."""
        await self.write(now=True)

    async def close(self) -> None:
        """Send what is pending and stop the deferred write; never raises (it runs on the way out of a
        run, also a cancelled one): a write that fails here, or takes over CLOSE_SECONDS, is logged."""
        later, failure, self._failure = self._later, self._failure, None
        if later is not None and self._sleeping:
            later.cancel()
        if failure is not None:  # the run ended before a write could raise it: the flush tries again
            log.warning("a deferred status write failed path=%s error=%r", self.path, failure)
        try:
            await asyncio.wait_for(self.flush(), CLOSE_SECONDS)
        except Exception as exc:  # the run's own outcome (or its cancellation) must not be masked
            log.warning("status not written at close path=%s error=%r", self.path, exc, exc_info=True)
        if later is not None and not later.done():
            await asyncio.wait({later})
        self._later = None

    async def _deferred(self, wait: float) -> None:
        try:
            await asyncio.sleep(wait)
        finally:
            self._sleeping = False
        try:
            async with self._lock:
                self._later = None  # changes from here on schedule a write of their own
                prepared = self._prepare()
                if prepared is not None:
                    await self._send(*prepared)
        except Exception as exc:  # noqa: BLE001 - kept and raised by the next write
            self._failure = exc

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def _send(self, wire: dict[str, Any], patch: dict[str, Any]) -> None:
        # What was sent, taken before the call: a row another task changes meanwhile is still unsent.
        body = {"status": patch}
        await self._retry(lambda: request(self.api, "PATCH", self.path, body, None, MERGE), "status")
        self._written = self._server = wire
        self._sent_at = self._clock()
        if self._status.phase != self._phase:
            self._phase = self._status.phase
            if self._on_phase is not None and self._phase is not None:
                self._on_phase(self._phase)
