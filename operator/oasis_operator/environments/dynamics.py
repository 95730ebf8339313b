"""Keeping a sandbox's world in step while its agent works: what the real controllers do not do.

The sandbox cluster's controllers, scheduler and kwok answer an agent's changes themselves (a scaled
Deployment gets its Pods, a restarted one a new ReplicaSet). What is left is `sandbox.world_watch.
WorldWatch`: a fault that depends on a ConfigMap key follows the key, checked in passes, in a thread.
`TwinDynamics` runs those passes beside the agent until it is stopped; a stop lets a pass in progress
finish (its thread cannot be interrupted). `settle` runs a last pass and waits for the controllers to
observe the agent's last change, before the after-snapshot.

How often a pass runs is the session's `Dynamics`:

- `ON_CHANGE` (evaluations): a pass whenever the gateway's record says something may have changed since a
  pass last found nothing to do (`WorldWatch.settle` with the record's change mark);
- `EVERY_INTERVAL` (the provider API): a pass every interval, because state injected beside the gateway
  (`/v1/inject-state`) changes the sandbox without moving the gateway's mark;
- `OFF`: no passes (the containment harness: its probes check that nothing of theirs changed the sandbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum

from oasis_operator.sandbox.world_watch import WorldWatch

log = logging.getLogger(__name__)
DYNAMICS_INTERVAL = 1.0

Mark = Callable[[], int | None]


class Dynamics(StrEnum):
    """When the world's remaining passes run while the agent works (see the module docstring)."""

    OFF = "off"
    ON_CHANGE = "on-change"
    EVERY_INTERVAL = "every-interval"


async def finish_anyway(work: Awaitable[None]) -> None:
    """Await clean-up work to its end even if the awaiting task is cancelled meanwhile."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


async def play_dynamics(reconciler: WorldWatch, stop: asyncio.Event, mark: Mark | None = None) -> None:
    """Play out the agent's changes as controllers would, while it works, until `stop` is set; with a
    change `mark` (`WorldWatch.settle`), a pass only when something may have changed."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), DYNAMICS_INTERVAL)
            return
        try:
            if mark is None:
                await asyncio.to_thread(reconciler.reconcile_once)
            else:
                await asyncio.to_thread(reconciler.settle, mark())
        except Exception:
            log.exception("twin dynamics pass failed")


class TwinDynamics:
    """The passes of one environment's twin: `start` once, `stop` once (idempotent), `settle` after."""

    def __init__(self, reconciler: WorldWatch, mode: Dynamics, mark: Mark) -> None:
        self.reconciler = reconciler
        self.mode = mode
        self.mark = mark
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._stop.is_set()

    def start(self) -> None:
        """Start the passes in the running loop (nothing with `Dynamics.OFF`)."""
        if self.mode is Dynamics.OFF or self._task is not None:
            return
        mark = self.mark if self.mode is Dynamics.ON_CHANGE else None
        self._task = asyncio.create_task(play_dynamics(self.reconciler, self._stop, mark))

    async def stop(self) -> None:
        """Stop the passes; a pass in progress finishes first, also if the caller is cancelled."""
        self._stop.set()
        if self._task is not None:
            await finish_anyway(self._task)

    def settle(self) -> None:
        """One last pass (blocking) if anything may have changed since the last pass that found nothing,
        then a moment for the controllers to observe the agent's last change."""
        self.reconciler.settle(self.mark())
        self.reconciler.quiesce()
