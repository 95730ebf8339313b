"""The status writer's coalescing: rows wait for the interval, everything else and `close` flush them."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.models.crd import ConditionStatus, EvaluationRef, Phase, ScenarioRow
from oasis_operator.models.scenario import Classification
from oasis_operator.status.cadence import Cadence
from oasis_operator.status.evaluation import read_status
from oasis_operator.status.writer import StatusWriter

OWNER = EvaluationRef(namespace="team-a", name="run", uid="0f1e2d3c")
STORED: dict[str, Any] = {
    "phase": "Safety",
    "observedGeneration": 1,
    "runGeneration": 1,
    "startedAt": "2026-01-01T00:00:00Z",
    "scenarios": [
        {"id": f"infra.safety.s{i}", "classification": "safety", "category": "c"} for i in range(3)
    ],
}
LONG = 3600.0  # an interval no test waits out: what goes out before it was sent by something else


class Recorder:
    """Stands in for the retry around the PATCH: keeps each body the writer sends (the PATCH itself is
    the API server's; tests/integration/evaluation/test_status_writer.py sends it)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.fail_next: Exception | None = None
        self.writer: StatusWriter | None = None

    async def __call__(self, call: Callable[[], Any], what: str) -> None:
        assert what == "status"
        failure, self.fail_next = self.fail_next, None
        if failure is not None:
            raise failure
        assert self.writer is not None
        self.bodies.append({"status": copy.deepcopy(self.writer.pending_patch())})


def _writer(interval: float, clock: Callable[[], float] | None = None) -> tuple[StatusWriter, Recorder]:
    recorder = Recorder()
    extra = {"clock": clock} if clock is not None else {}
    writer = StatusWriter(
        ApiClient(), OWNER, read_status(STORED), lambda: 1, stored=STORED, retry=recorder,
        cadence=Cadence(interval=interval), **extra,
    )  # fmt: skip
    recorder.writer = writer
    return writer, recorder


def _start(writer: StatusWriter, index: int) -> None:
    writer.set_row(index, writer.rows[index].model_copy(update={"startedAt": f"2026-01-01T00:00:0{index}Z"}))


def _rows(body: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = body["status"]["scenarios"]
    return rows


async def _until(check: Callable[[], bool], seconds: float = 30.0) -> None:
    """Wait (bounded) for the deferred write to have gone out; a loaded machine only makes it later."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "the deferred write never went out"
        await asyncio.sleep(0.01)


def test_row_changes_within_the_interval_go_out_together_once_it_has_passed() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=0.2)
        await writer.write()  # the writer's first write is always at once
        assert len(recorder.bodies) == 1
        for index in range(3):
            _start(writer, index)
            await writer.write()
        assert len(recorder.bodies) == 1  # all three wait for the interval
        await _until(lambda: len(recorder.bodies) == 2)
        assert [r.get("startedAt") for r in _rows(recorder.bodies[1])] == [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:01Z",
            "2026-01-01T00:00:02Z",
        ]
        await asyncio.sleep(0.3)
        assert len(recorder.bodies) == 2  # nothing changed since: no write
        await writer.close()

    asyncio.run(scenario())


def test_a_row_change_after_a_quiet_interval_goes_out_at_once() -> None:
    now = [100.0]

    async def scenario() -> None:
        writer, recorder = _writer(interval=1.0, clock=lambda: now[0])
        await writer.write()
        now[0] += 5.0  # five quiet seconds since the last write
        _start(writer, 0)
        await writer.write()
        assert len(recorder.bodies) == 2
        assert _rows(recorder.bodies[1])[0]["startedAt"] == "2026-01-01T00:00:00Z"
        now[0] += 0.1
        _start(writer, 1)
        await writer.write()
        assert len(recorder.bodies) == 2  # within the interval of that write: deferred
        await writer.close()
        assert len(recorder.bodies) == 3

    asyncio.run(scenario())


def test_a_phase_change_goes_out_at_once_and_carries_the_waiting_rows() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        await writer.write()
        _start(writer, 0)
        await writer.write()
        assert len(recorder.bodies) == 1
        writer.set_condition("Progressing", ConditionStatus.TRUE, "Capability", "running capability")
        writer.set_phase(Phase.CAPABILITY)
        await writer.write()
        assert len(recorder.bodies) == 2
        sent = recorder.bodies[1]["status"]
        assert sent["phase"] == "Capability"
        assert sent["scenarios"][0]["startedAt"] == "2026-01-01T00:00:00Z"
        await writer.close()
        assert len(recorder.bodies) == 2  # the deferred write had nothing left to send

    asyncio.run(scenario())


def test_the_terminal_write_is_immediate_with_every_row_and_count() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        await writer.write()
        for index in range(3):
            row = writer.rows[index].model_copy(update={"result": "PASS", "finishedAt": "T"})
            writer.set_row(index, row)
            writer.count()
            await writer.write()
        assert len(recorder.bodies) == 1
        writer.finish(Phase.COMPLETED)
        await writer.write()
        assert len(recorder.bodies) == 2
        final = recorder.bodies[1]["status"]
        assert final["phase"] == "Completed"
        assert [r["result"] for r in final["scenarios"]] == ["PASS", "PASS", "PASS"]
        assert final["progress"]["done"] == final["progress"]["passed"] == 3
        assert final == writer.wire()  # the whole status, nothing left for later
        await writer.close()
        assert writer._later is None

    asyncio.run(scenario())


def test_now_sends_a_row_change_at_once() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        await writer.write()
        _start(writer, 2)
        await writer.write(now=True)
        assert len(recorder.bodies) == 2
        assert _rows(recorder.bodies[1])[2]["startedAt"] == "2026-01-01T00:00:02Z"
        await writer.close()

    asyncio.run(scenario())


def test_close_sends_what_waits_and_leaves_no_task_behind() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        await writer.write()
        _start(writer, 1)
        await writer.write()
        waiting = writer._later
        assert waiting is not None
        await writer.close()
        assert len(recorder.bodies) == 2
        assert _rows(recorder.bodies[1])[1]["startedAt"] == "2026-01-01T00:00:01Z"
        assert waiting.done()
        assert writer._later is None

    asyncio.run(scenario())


def test_a_cancelled_run_still_sends_its_pending_rows_on_the_way_out() -> None:
    """As `EvaluationService.run` does: the writer is closed in a `finally` of the cancelled task."""

    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        started = asyncio.Event()

        async def run() -> None:
            try:
                await writer.write()
                row = writer.rows[0].model_copy(update={"result": "FAIL", "finishedAt": "T"})
                writer.set_row(0, row)
                writer.count()
                await writer.write()
                started.set()
                await asyncio.sleep(LONG)  # the agent of the next scenario, say
            finally:
                await writer.close()

        task = asyncio.create_task(run())
        await started.wait()
        assert len(recorder.bodies) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(recorder.bodies) == 2
        sent = recorder.bodies[1]["status"]
        assert sent["scenarios"][0]["result"] == "FAIL"
        assert sent["progress"]["failed"] == 1

    asyncio.run(scenario())


def test_a_failed_deferred_write_is_raised_by_the_next_write_once_and_nothing_is_lost() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=0.05)
        await writer.write()
        recorder.fail_next = RuntimeError("422: status.scenarios[0].startedAt: bad")
        _start(writer, 0)
        await writer.write()
        await _until(lambda: writer._failure is not None)
        with pytest.raises(RuntimeError, match="422"):
            await writer.write()
        await writer.write(now=True)  # the change is still pending: the next write sends it
        assert len(recorder.bodies) == 2
        assert _rows(recorder.bodies[1])[0]["startedAt"] == "2026-01-01T00:00:00Z"
        await writer.close()

    asyncio.run(scenario())


def test_close_never_raises_when_the_last_write_fails() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        await writer.write()
        _start(writer, 0)
        await writer.write()
        recorder.fail_next = ConnectionRefusedError("host API away")
        await writer.close()  # logged, not raised: the run's own outcome must not be masked
        assert len(recorder.bodies) == 1

    asyncio.run(scenario())


def test_rows_of_a_fresh_writer_go_out_with_its_first_write() -> None:
    async def scenario() -> None:
        writer, recorder = _writer(interval=LONG)
        writer.set_rows([ScenarioRow(id="only", classification=Classification.SAFETY)])
        writer.count()
        await writer.write()
        assert len(recorder.bodies) == 1
        assert [r["id"] for r in _rows(recorder.bodies[0])] == ["only"]
        await writer.close()

    asyncio.run(scenario())
