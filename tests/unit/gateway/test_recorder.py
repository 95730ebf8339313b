"""The record: `AuditEntry` request lines completed by response lines, stimuli, torn and corrupt lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from oasis_operator.gateway import integrity
from oasis_operator.gateway.recorder import Completion, Recorder, RecordUnavailableError, read_record
from oasis_operator.models.evidence import Actor, AuditEntry, SourceStatus


def _entry(**fields: object) -> AuditEntry:
    base: dict[str, object] = {"seq": 0, "time": "", "verb": "list", "resource": "pods", "response_code": 0}
    return AuditEntry.model_validate({**base, **fields})


def test_entries_are_written_before_and_completed_after(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    seq = recorder.begin(_entry(method="GET", path="/api/v1/namespaces/default/pods", query={"limit": "5"}))
    pending = read_record(recorder.path)
    assert pending.available
    assert pending.entries[0].response_code == 0  # recorded before any answer
    assert pending.entries[0].completed_at is None
    recorder.complete(seq, Completion(200, 1234, uid="u-1", resource_version="42"))
    recorder.stimulus("STIM-TEMP-001", "after_1_tool_calls", "alert fires")
    record = read_record(recorder.path)
    (entry,) = record.entries
    assert (entry.seq, entry.verb, entry.response_code, entry.response_bytes) == (1, "list", 200, 1234)
    assert (entry.response_uid, entry.response_resource_version, entry.query) == ("u-1", "42", {"limit": "5"})
    assert entry.completed_at is not None
    assert record.audit_log.evidence_source.type == "gateway_audit"
    assert record.audit_log.append_only
    assert (record.stimuli[0].stimulus, record.stimuli[0].after_seq) == ("STIM-TEMP-001", 1)
    again = Recorder(tmp_path / "env")
    assert again.begin(_entry(method="GET", path="/api")) == 2  # numbering survives a restart


def test_a_later_response_line_replaces_the_earlier_one_whole(tmp_path: Path) -> None:
    """A watch is answered twice: "stream open" when it starts, then its closing line (no note)."""
    recorder = Recorder(tmp_path / "env")
    seq = recorder.begin(_entry(method="GET", verb="watch", path="/api/v1/pods", query={"watch": "true"}))
    recorder.complete(seq, Completion(200, 0, "stream open"))
    (opened,) = read_record(recorder.path).entries
    assert (opened.response_code, opened.response_bytes, opened.note) == (200, 0, "stream open")
    recorder.complete(seq, Completion(200, 5120))
    (closed,) = read_record(recorder.path).entries
    assert (closed.response_code, closed.response_bytes, closed.note) == (200, 5120, "")


def test_foreign_attribution_survives_the_round_trip(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    seq = recorder.begin(_entry(actor=Actor.FOREIGN, credential="sha256:0123456789abcdef"))
    recorder.complete(seq, Completion(401, 10, "refused: a bearer credential"))
    (entry,) = read_record(recorder.path).entries
    assert (entry.actor, entry.credential, entry.note) == (
        Actor.FOREIGN,
        "sha256:0123456789abcdef",
        "refused: a bearer credential",
    )


def test_a_storage_fault_is_unreachable_never_empty(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    recorder.path.unlink()
    recorder.path.mkdir()
    with pytest.raises(RecordUnavailableError):
        recorder.begin(_entry())
    assert recorder.fault
    assert read_record(recorder.path).audit_log.evidence_source.status == SourceStatus.UNREACHABLE
    assert not read_record(tmp_path / "missing" / "gateway-audit.jsonl").available


def test_a_corrupt_line_is_unreachable_naming_file_and_line(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    recorder.begin(_entry())
    with recorder.path.open("a") as handle:  # sealed into the chain, but not a record line
        handle.write(integrity.Chain(recorder.head).seal('{"record":"request"}') + "\n")
    record = read_record(recorder.path)
    assert not record.available
    assert record.entries == []
    assert record.reason.startswith(f"{recorder.path}: ")
    assert "record line 2" in record.reason


def test_a_torn_last_line_is_waited_for_then_a_fault_naming_file_and_offset(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    recorder.begin(_entry())
    size = recorder.path.stat().st_size
    line = integrity.Chain(recorder.head).seal('{"record":"response","seq":1,"response_code":204}')
    half = len(line) // 2
    with recorder.path.open("a") as handle:
        handle.write(line[:half])
    record = read_record(recorder.path, torn_wait=0.1)
    assert not record.available
    assert (
        record.reason == f"{recorder.path}: the last line (at byte offset {size}) is incomplete after 0.1 s"
    )
    with recorder.path.open("a") as handle:
        handle.write(line[half:] + "\n")  # the writer finished the line: nothing is lost
    (entry,) = read_record(recorder.path, torn_wait=0.1).entries
    assert entry.response_code == 204


def test_the_quiet_mark_moves_with_every_possible_change_and_waits_for_its_answer(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    assert recorder.quiet_mark == 0
    recorder.complete(recorder.begin(_entry(method="GET", path="/api/v1/pods")), Completion(200))
    assert recorder.quiet_mark == 0  # a read changes nothing
    write = recorder.begin(_entry(method="PATCH", verb="patch", path="/api/v1/namespaces/a/pods/p"))
    assert recorder.quiet_mark is None  # unanswered: it may land at any moment
    recorder.complete(write, Completion(403))
    assert recorder.quiet_mark == 1  # refused writes count too: the mark only ever overcounts
    recorder.stimulus("STIM-TEMP-001", "after_1_tool_calls", "the node goes NotReady")
    assert recorder.quiet_mark == 2
    lost = recorder.begin(_entry(method="DELETE", verb="delete", path="/api/v1/namespaces/a/pods/p"))
    recorder.complete(lost, Completion(499, note="cancelled before an answer"))
    assert recorder.quiet_mark is None  # it may still land: never quiet again
    assert Recorder(tmp_path / "env").quiet_mark == 3  # a restarted gateway counts every earlier request
