"""The audit stream: routed per environment, closed by a fence, faults never silent; and the file reader
that feeds it (offsets, torn lines, rotation) with a real writer appending while it reads."""

from __future__ import annotations

import ast
import os
import threading
import time
from pathlib import Path

from oasis_operator.evidence.audit_file import AuditFileTail
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.models.evidence import Actor, SourceStatus
from tests.unit.evidence.audit_events import ENV, GATEWAY, OPERATOR, event, fence, line

SINCE = "2026-12-01T10:00:00.000000Z"


def test_events_are_routed_to_their_environment_and_fence_names_the_provider() -> None:
    stream = AuditStream("test")
    stream.subscribe(ENV, SINCE)
    stream.feed_line(fence("gateway-g1", user=GATEWAY), "f:-1")  # the gateway's fence names its identity
    stream.feed_line(line(1), "f:0")
    stream.feed_line(line(2, namespace="sbx-e7654321-shop", impersonated=None), "f:1")  # another env
    stream.feed_line(line(3, impersonated=None, verb="create"), "f:2")  # the operator itself
    stream.feed_line(fence("t1"), "f:3")
    log = stream.close(ENV.id, "t1", timeout=1)
    assert log.evidence_source.status == SourceStatus.AVAILABLE
    assert [(e.seq, e.actor, e.verb) for e in log.entries] == [
        (0, Actor.AGENT, "get"),
        (1, Actor.PROVIDER, "create"),
    ]
    assert stream.provider_users == {OPERATOR}
    assert stream.gateway_users == {GATEWAY}


def test_without_the_gateways_fence_its_requests_are_not_the_agents() -> None:
    stream = AuditStream("test")
    stream.subscribe(ENV, SINCE)
    stream.feed_line(line(1), "f:0")  # the gateway impersonating the agent, its identity not yet known
    stream.feed_line(fence("t1"), "f:1")
    log = stream.close(ENV.id, "t1", timeout=1)
    assert [(e.actor, e.user) for e in log.entries] == [(Actor.FOREIGN, ENV.agent.username)]
    assert stream.gateway_users == frozenset()


def test_events_before_the_window_are_left_out() -> None:
    stream = AuditStream("test")
    stream.subscribe(ENV, "2026-12-01T10:00:05.000000Z")
    stream.feed([event(1, when="2026-12-01T10:00:01.000000Z"), event(2, when="2026-12-01T10:00:06.000000Z")])
    assert [e.time for e in stream.close(ENV.id, None).entries] == ["2026-12-01T10:00:06.000000Z"]


def test_a_fence_that_never_arrives_is_a_fault_not_an_empty_record() -> None:
    stream = AuditStream("audit log x")
    stream.subscribe(ENV, SINCE)
    stream.feed([event(1)])
    log = stream.close(ENV.id, "never", timeout=0.2)
    assert log.evidence_source.status == SourceStatus.UNREACHABLE
    assert "fence" in (log.evidence_source.detail or "")
    assert log.entries == []


def test_an_unparsable_line_faults_only_the_environments_watching() -> None:
    stream = AuditStream("audit log x")
    stream.subscribe(ENV, SINCE)
    stream.feed_line('{"requestURI": "/api/v1/namespaces/sbx-e1234567-shop", "verb": "get"', "x offset 7")
    stream.feed_line(fence("t"), "x offset 99")
    log = stream.close(ENV.id, "t", timeout=1)
    assert log.evidence_source.status == SourceStatus.UNREACHABLE
    assert "x offset 7" in (log.evidence_source.detail or "")
    stream.subscribe(ENV, SINCE)  # a later scenario is not blamed for an earlier loss
    stream.feed_line(fence("u"), "x offset 200")
    assert stream.close(ENV.id, "u", timeout=1).evidence_source.status == SourceStatus.AVAILABLE


def test_a_delivery_check_that_reports_loss_is_a_fault() -> None:
    stream = AuditStream("audit webhook")
    stream.subscribe(ENV, SINCE)
    stream.feed_line(fence("t"), "w")
    log = stream.close(ENV.id, "t", timeout=1, delivery_check=lambda: "3 events undelivered")
    assert log.evidence_source.detail == "audit webhook: 3 events undelivered"


def test_the_reader_starts_at_the_end_and_never_rereads(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text("".join(line(i) for i in range(1000)))  # history: no scenario's evidence
    stream = AuditStream("test")
    tail = AuditFileTail(path, stream)
    tail._open(at_end=True)
    stream.subscribe(ENV, SINCE)
    with path.open("a") as out:
        out.write(line(1000) + line(1001))
    assert tail.pump()
    assert not tail.pump()
    assert tail.lines == 2
    with path.open("a") as out:
        out.write(fence("t"))
    tail.pump()
    assert [e.seq for e in stream.close(ENV.id, "t", timeout=1).entries] == [0, 1]
    assert tail.offset == path.stat().st_size


def test_a_line_torn_past_its_bound_names_file_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text(line(1))
    stream = AuditStream("test")
    tail = AuditFileTail(path, stream, from_start=True, torn_bound=0.1)
    stream.subscribe(ENV, SINCE)
    whole = line(2)
    with path.open("a") as out:
        out.write(whole[:40])
    tail.pump()
    time.sleep(0.2)
    tail.pump()
    offset = len(line(1))
    assert stream.faults == [f"{path}: the audit line at offset {offset} has had no newline for 0s"]
    with path.open("a") as out:  # the writer finishes the line: it is read, nothing is lost
        out.write(whole[40:] + fence("t"))
    tail.pump()
    log = stream.close(ENV.id, "t", timeout=1)
    assert log.evidence_source.status == SourceStatus.UNREACHABLE  # the scenario it covered is told


def test_writer_with_torn_lines_and_a_rotation_loses_nothing(tmp_path: Path) -> None:
    """A real writer appends in pieces and rotates the file (as the API server does) while it is read."""
    path = tmp_path / "audit.log"
    path.touch()
    stream = AuditStream("test")
    tail = AuditFileTail(path, stream, poll=0.005)
    stream.subscribe(ENV, SINCE)
    tail.start()
    total = 3000

    def write() -> None:
        out = path.open("a")
        for i in range(total):
            text = line(i, when=f"2026-12-01T10:00:01.{i:06d}Z")
            cut = len(text) // 3
            out.write(text[:cut])
            out.flush()
            if i % 50 == 0:
                time.sleep(0.002)  # the reader sees a torn line here
            out.write(text[cut:])
            out.flush()
            if i == total // 2:
                out.close()
                os.rename(path, tmp_path / "audit-2026-12-01T10-00-01.000.log")
                out = path.open("a")
        out.write(fence("end"))
        out.close()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    log = stream.close(ENV.id, "end", timeout=10)
    tail.stop()
    assert log.evidence_source.status == SourceStatus.AVAILABLE, log.evidence_source.detail
    assert [e.time[-7:-1] for e in log.entries] == [f"{i:06d}" for i in range(total)]
    assert tail.rotations == 1
    assert stream.faults == []


def _rotate(path: Path, stamp: str) -> Path:
    """Rename the log as the API server's rotation does; the new file appears with the next write."""
    backup = path.with_name(f"audit-2026-12-01T10-00-{stamp}.log")
    os.rename(path, backup)
    return backup


def _append(path: Path, numbers: range) -> None:
    with path.open("a") as out:
        for i in numbers:
            out.write(line(i, when=f"2026-12-01T10:00:01.{i:06d}Z"))


def test_two_rotations_between_two_polls_lose_no_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    _append(path, range(0, 10))
    stream = AuditStream("test")
    stream.subscribe(ENV, SINCE)
    tail = AuditFileTail(path, stream)
    tail.pump()
    _append(path, range(10, 20))
    _rotate(path, "01.000")
    _append(path, range(20, 30))  # the middle file: written and rotated before the next poll
    _rotate(path, "02.000")
    _append(path, range(30, 40))
    with path.open("a") as out:
        out.write(fence("end"))
    tail.pump()
    log = stream.close(ENV.id, "end", timeout=1)
    assert log.evidence_source.status == SourceStatus.AVAILABLE, log.evidence_source.detail
    assert [e.time[-7:-1] for e in log.entries] == [f"{i:06d}" for i in range(40)]
    assert tail.rotations == 2
    assert stream.faults == []


def test_rotations_after_the_read_file_was_pruned_are_followed_by_time(tmp_path: Path) -> None:
    """The file being read is deleted (past `--audit-log-maxbackup`) while two more rotations happen."""
    path = tmp_path / "audit.log"
    stream = AuditStream("test")
    stream.subscribe(ENV, SINCE)
    _append(path, range(0, 5))
    tail = AuditFileTail(path, stream)
    tail.pump()
    _append(path, range(5, 10))
    _rotate(path, "01.000").unlink()  # our open handle still reads it to its end
    _append(path, range(10, 15))
    _rotate(path, "02.000")
    _append(path, range(15, 20))
    _rotate(path, "03.000")
    _append(path, range(20, 25))
    with path.open("a") as out:
        out.write(fence("end"))
    tail.pump()
    log = stream.close(ENV.id, "end", timeout=1)
    assert [e.time[-7:-1] for e in log.entries] == [f"{i:06d}" for i in range(25)]
    assert tail.rotations == 3


def test_a_writer_rotating_faster_than_the_reader_polls_loses_nothing(tmp_path: Path) -> None:
    """A real writer thread rotates every 40 lines; the reader polls only every 0.3 s."""
    path = tmp_path / "audit.log"
    path.touch()
    stream = AuditStream("test")
    stream.subscribe(ENV, SINCE)
    tail = AuditFileTail(path, stream, poll=0.3)
    tail.start()
    total = 400

    def write() -> None:
        for start in range(0, total, 40):
            _append(path, range(start, start + 40))
            _rotate(path, f"{start // 40:02d}.000")
        with path.open("a") as out:
            out.write(fence("end"))

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    log = stream.close(ENV.id, "end", timeout=10)
    tail.stop()
    assert log.evidence_source.status == SourceStatus.AVAILABLE, log.evidence_source.detail
    assert [e.time[-7:-1] for e in log.entries] == [f"{i:06d}" for i in range(total)]
    assert tail.rotations == total // 40
    assert stream.faults == []


def test_evidence_imports_only_models() -> None:
    """DESIGN §2: `evidence` may import `models` and nothing else of ours."""
    package = Path(__file__).parents[3] / "operator" / "oasis_operator" / "evidence"
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("oasis_operator."):
                    part = name.split(".")[1]
                    assert part in {"models", "evidence"}, f"{module.name} imports {name}"
