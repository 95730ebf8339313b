"""The background teardown queue: bounded concurrency, the pending gauge, drain, and failures."""

from __future__ import annotations

import asyncio
import threading

import pytest

from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.metrics import REGISTRY


def pending_gauge() -> float:
    return REGISTRY.get_sample_value("oasis_sandboxes_pending_removal") or 0.0


def test_removals_run_at_most_concurrency_at_a_time_and_drain_waits_for_all() -> None:
    release, two_started = threading.Event(), threading.Event()
    lock = threading.Lock()
    running, most, finished = [0], [0], []

    def removal(env: str) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            if running[0] == 2:
                two_started.set()
        release.wait(30)
        with lock:
            running[0] -= 1
            finished.append(env)

    async def main() -> tuple[int, float, float]:
        queue = BackgroundTeardown(concurrency=2)
        base = pending_gauge()
        for i in range(5):
            queue.submit(f"e{i}", lambda i=i: removal(f"e{i}"))
        # the first two start; the other three wait for a slot
        assert await asyncio.to_thread(two_started.wait, 30)
        queued, gauge = queue.pending, pending_gauge() - base
        release.set()
        await queue.drain()
        return queued, gauge, pending_gauge() - base

    queued, gauge, after = asyncio.run(main())
    assert (queued, gauge) == (5, 5)
    assert most[0] == 2
    assert sorted(finished) == [f"e{i}" for i in range(5)]
    assert after == 0


def test_a_failed_removal_is_logged_and_reports_no_time(caplog: pytest.LogCaptureFixture) -> None:
    times: list[float] = []

    def broken() -> None:
        raise RuntimeError("sandbox API server gone")

    async def main() -> None:
        queue = BackgroundTeardown()
        queue.submit("env1", broken, times.append)
        queue.submit("env2", lambda: None, times.append)
        await queue.drain()

    asyncio.run(main())
    assert len(times) == 1, "only the removal that succeeded reports its time"
    assert "background teardown failed env=env1" in caplog.text


def test_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BackgroundTeardown(concurrency=0)
