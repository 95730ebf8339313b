"""The world's remaining passes: which passes it runs in each mode, and that a stop lets a pass finish."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import cast

import pytest

from oasis_operator.environments import dynamics
from oasis_operator.environments.dynamics import Dynamics, TwinDynamics
from oasis_operator.sandbox.world_watch import WorldWatch


class FakeReconciler:
    """Counts passes; a pass may be held until released, to stop the loop in the middle of one."""

    def __init__(self, hold: float = 0.0) -> None:
        self.passes: list[str] = []
        self.marks: list[int | None] = []
        self.hold = hold
        self.in_pass = threading.Event()
        self.finished = 0

    def reconcile_once(self) -> list[str]:
        self.passes.append("reconcile")
        self.in_pass.set()
        time.sleep(self.hold)
        self.finished += 1
        return []

    def settle(self, mark: int | None) -> list[str]:
        self.marks.append(mark)
        self.passes.append("settle")
        return []

    def quiesce(self, timeout: float = 0.0) -> bool:
        self.passes.append("quiesce")
        return True


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamics, "DYNAMICS_INTERVAL", 0.01)


def _run(reconciler: FakeReconciler, mode: Dynamics, seconds: float) -> TwinDynamics:
    async def main() -> TwinDynamics:
        loop = TwinDynamics(cast(WorldWatch, reconciler), mode, lambda: 7)
        loop.start()
        await asyncio.sleep(seconds)
        await loop.stop()
        return loop

    return asyncio.run(main())


def test_off_runs_no_pass() -> None:
    reconciler = FakeReconciler()
    loop = _run(reconciler, Dynamics.OFF, 0.1)
    assert reconciler.passes == []
    assert loop.running is False


def test_on_change_settles_with_the_gateways_mark() -> None:
    reconciler = FakeReconciler()
    _run(reconciler, Dynamics.ON_CHANGE, 0.1)
    assert reconciler.passes
    assert set(reconciler.passes) == {"settle"}
    assert set(reconciler.marks) == {7}


def test_every_interval_reconciles_without_a_mark() -> None:
    reconciler = FakeReconciler()
    _run(reconciler, Dynamics.EVERY_INTERVAL, 0.1)
    assert reconciler.passes
    assert set(reconciler.passes) == {"reconcile"}


def test_a_stop_lets_the_pass_in_progress_finish() -> None:
    reconciler = FakeReconciler(hold=0.3)

    async def main() -> int:
        loop = TwinDynamics(cast(WorldWatch, reconciler), Dynamics.EVERY_INTERVAL, lambda: None)
        loop.start()
        await asyncio.to_thread(reconciler.in_pass.wait, 5)
        await loop.stop()
        return reconciler.finished

    assert asyncio.run(main()) == 1, "stop returned only once the pass it met had finished"
    assert reconciler.passes == ["reconcile"], "no pass starts after the stop"
