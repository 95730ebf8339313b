"""Removing scenario sandboxes in the background, off the scenario's critical path.

A scenario's slot is free once its evidence is stored; its sandbox is then removed here, at most
`concurrency` at a time, so removals never crowd out the scenarios still running. Nothing depends on
this queue for correctness: every sandbox namespace carries its environment and evaluation, so what a
removal did not finish (a fault, an operator stopped mid-way) is found again by the evaluation's own
sweep when it ends or resumes, and by the orphan collection at start-up once the evaluation is gone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from oasis_operator.metrics import SANDBOXES_PENDING_REMOVAL

log = logging.getLogger(__name__)
DEFAULT_CONCURRENCY = 2

Removal = Callable[[], object]
Done = Callable[[float], None]


class BackgroundTeardown:
    """A bounded set of sandbox removals running beside the evaluation; `drain` waits for all of them."""

    def __init__(self, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        if concurrency < 1:
            raise ValueError(f"teardown concurrency must be at least 1, not {concurrency}")
        self.slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """Removals queued or under way."""
        return len(self._tasks)

    def submit(self, env_id: str, removal: Removal, done: Done | None = None) -> None:
        """Queue `removal` of environment `env_id`; `done(seconds)` is called once it has succeeded."""
        SANDBOXES_PENDING_REMOVAL.inc()
        task = asyncio.get_running_loop().create_task(self._remove(env_id, removal, done))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _remove(self, env_id: str, removal: Removal, done: Done | None) -> None:
        try:
            async with self.slots:
                begun = time.perf_counter()
                try:
                    await asyncio.to_thread(removal)
                except Exception:
                    # Left to the evaluation's closing sweep and the orphan collector (see the docstring).
                    log.exception("background teardown failed env=%s", env_id)
                    return
                if done is not None:
                    done(time.perf_counter() - begun)
        finally:
            SANDBOXES_PENDING_REMOVAL.dec()

    async def drain(self) -> None:
        """Wait until every queued removal has finished (each one's failure is logged, not raised)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
