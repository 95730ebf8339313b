"""The one writer of an evaluation's status while it runs (merge patches of the whole status).

The writer holds the status as an `OASISEvaluationStatus`; every change goes through one of its typed
methods, and `write` sends the model as the CRD has it (see `status.evaluation`). How a failed write is
retried and what a phase change is counted as are the caller's (`retry`, `on_phase`): the run waits out
a short outage of the host API server so its outcome is not lost to it.
"""

from __future__ import annotations

import asyncio
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
    VerdictSummary,
)
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.status.conditions import now_rfc3339, set_condition, spec_frozen
from oasis_operator.status.evaluation import merge_patch, ours, to_wire
from oasis_operator.status.rows import progress

MERGE = "application/merge-patch+json"
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

        Before it is computed, the status observes the current generation and, once the spec moved on
        after the run started, carries the SpecFrozen condition.
        """
        prepared = self._prepare()
        return prepared[1] if prepared is not None else None

    def _prepare(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        generation = self.generation()
        now = now_rfc3339()
        frozen = spec_frozen(self._status.conditions, self._status.runGeneration, generation, now)
        if frozen != self._status.conditions:
            self._status.conditions = frozen
        self._status.observedGeneration = generation
        wire = to_wire(self._status)
        if wire == self._written:
            return None
        return wire, merge_patch(self._server, wire)

    async def write(self) -> None:
        """Write the status if anything differs from the last write."""
        async with self._lock:
            prepared = self._prepare()
            if prepared is None:
                return
            # What was sent, taken before the call: a row another task changes meanwhile is still unsent.
            wire, patch = prepared
            body = {"status": patch}
            await self._retry(lambda: request(self.api, "PATCH", self.path, body, None, MERGE), "status")
            self._written = self._server = wire
            if self._status.phase != self._phase:
                self._phase = self._status.phase
                if self._on_phase is not None and self._phase is not None:
                    self._on_phase(self._phase)
