"""Measuring a scenario's phases as it runs, and exporting each one to the phase histogram."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from oasis_operator.metrics import observe_phase
from oasis_operator.models.crd import ScenarioRow
from oasis_operator.models.timings import PHASES, PhaseTimings


class PhaseClock:
    """Accumulates wall time per phase; every finished phase is also observed in the metrics."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._sink: Callable[[PhaseTimings], None] | None = None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the body as phase `name` (a failed phase counts as far as it got)."""
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}; phases are {', '.join(PHASES)}")
        begun = time.perf_counter()
        try:
            yield
        finally:
            self.record(name, time.perf_counter() - begun)

    def record(self, name: str, seconds: float) -> None:
        """Add `seconds` to phase `name` and observe it."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        observe_phase(name, seconds)
        if self._sink is not None:
            self._sink(self.timings())

    def follow(self, sink: Callable[[PhaseTimings], None]) -> None:
        """Hand the timings to `sink` (a status row's) now and again as later phases (teardown) end."""
        self._sink = sink
        sink(self.timings())

    def timings(self) -> PhaseTimings:
        """The phases measured so far, rounded to the millisecond."""
        return PhaseTimings.model_validate({k: round(v, 3) for k, v in self.seconds.items()})


def row_timings(rows: list[ScenarioRow]) -> dict[str, PhaseTimings]:
    """The timings of every status row that has them, by scenario id (for the report)."""
    return {r.id: r.timings for r in rows if r.timings is not None}
