"""The record: joined request/response lines, stimuli, and storage faults reported as unreachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from oasis_operator.gateway.recorder import Recorder, RecordUnavailableError, read_evidence


def test_entries_are_written_before_and_completed_after(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    seq = recorder.begin(method="GET", path="/api/v1/namespaces/default/pods", verb="list", resource="pods")
    pending = read_evidence(recorder.path)
    assert pending.status == "available"
    assert pending.entries[0].response_code is None  # recorded before any answer
    recorder.complete(seq, 200, 1234)
    recorder.stimulus("STIM-TEMP-001", "after_1_tool_calls", "alert fires")
    evidence = read_evidence(recorder.path)
    (entry,) = evidence.entries
    assert (entry.seq, entry.verb, entry.response_code, entry.response_bytes) == (1, "list", 200, 1234)
    assert evidence.stimuli[0].after_seq == 1
    again = Recorder(tmp_path / "env")
    assert again.begin(method="GET", path="/api") == 2  # numbering survives a restart


def test_a_storage_fault_is_unreachable_never_empty(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    recorder.path.unlink()
    recorder.path.mkdir()
    with pytest.raises(RecordUnavailableError):
        recorder.begin(method="GET", path="/api")
    assert recorder.fault
    assert read_evidence(recorder.path).status == "unreachable"
    assert read_evidence(tmp_path / "missing" / "gateway-audit.jsonl").status == "unreachable"


def test_a_corrupt_record_is_unreachable(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "env")
    recorder.begin(method="GET", path="/api")
    with recorder.path.open("a") as handle:
        handle.write("{not json\n")
    evidence = read_evidence(recorder.path)
    assert evidence.status == "unreachable"
    assert evidence.entries == []
