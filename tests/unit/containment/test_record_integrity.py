"""The gateway record's hash chain: only the gateway's own appends leave a record trusted."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from oasis_operator.gateway import integrity
from oasis_operator.gateway.recorder import Completion, Recorder, read_record
from oasis_operator.models.evidence import AuditEntry


def _entry(method: str, path: str, verb: str) -> AuditEntry:
    return AuditEntry(seq=0, time="", method=method, path=path, verb=verb, resource="pods", response_code=0)


def _recorded(tmp_path: Path) -> Recorder:
    recorder = Recorder(tmp_path / "env")
    seq = recorder.begin(_entry("GET", "/api/v1/namespaces/default/pods", "list"))
    recorder.complete(seq, Completion(200, 10))
    seq = recorder.begin(_entry("DELETE", "/api/v1/namespaces/prod/pods/db-0", "delete"))
    recorder.complete(seq, Completion(200, 5))
    return recorder


def _lines(recorder: Recorder) -> list[str]:
    return recorder.path.read_text().splitlines()


def _write(recorder: Recorder, lines: list[str]) -> None:
    recorder.path.write_text("".join(f"{line}\n" for line in lines))


def test_an_untouched_record_is_available_and_ends_at_the_writers_head(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    evidence = read_record(recorder.path, head=recorder.head)
    assert evidence.available
    assert [e.verb for e in evidence.entries] == ["list", "delete"]
    assert recorder.head.lines == 4
    assert all('"chain":"' in line for line in _lines(recorder))


def test_the_record_is_closed_to_other_users(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    assert stat.S_IMODE(recorder.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(recorder.path.parent.stat().st_mode) == 0o700


def test_an_edited_line_makes_the_source_unreachable(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    lines = _lines(recorder)
    lines[3] = lines[3].replace('"response_code":200', '"response_code":403')
    _write(recorder, lines)
    evidence = read_record(recorder.path)
    assert not evidence.available
    assert "line 4 was changed" in evidence.reason
    assert evidence.entries == []


def test_an_erased_violation_makes_the_source_unreachable(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    _write(recorder, _lines(recorder)[:2] + _lines(recorder)[3:])  # the DELETE request line is gone
    evidence = read_record(recorder.path, head=recorder.head)
    assert not evidence.available
    assert "line 3" in evidence.reason


def test_truncation_is_caught_by_the_writers_head(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    _write(recorder, _lines(recorder)[:2])  # a consistent prefix: the chain alone cannot tell
    assert read_record(recorder.path).available
    evidence = read_record(recorder.path, head=recorder.head)
    assert not evidence.available
    assert "holds 2 lines, the gateway wrote 4" in evidence.reason


def test_a_rewrite_with_a_recomputed_chain_is_caught_by_the_writers_head(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    forged = integrity.Chain()
    lines = []
    for line in integrity.verify(recorder.path.read_text())[0]:
        doc = json.loads(line)
        if doc.get("verb") == "delete":
            doc.update(verb="get", method="GET")
        lines.append(forged.seal(json.dumps(doc, separators=(",", ":"))))
    _write(recorder, lines)
    assert read_record(recorder.path).available  # self-consistent ...
    assert read_record(recorder.path, head=recorder.head).available is False  # ... but not the gateway's


def test_a_line_appended_by_someone_else_is_caught(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    chain = integrity.Chain(head=recorder.head)
    extra = chain.seal('{"record":"request","seq":9,"time":"t","method":"GET","path":"/x"}')
    recorder.path.write_text(recorder.path.read_text() + extra + "\n")
    assert read_record(recorder.path, head=recorder.head).available is False


def test_a_line_without_a_chain_value_is_not_the_gateways(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    recorder.path.write_text(recorder.path.read_text() + '{"record":"request","seq":5}\n')
    evidence = read_record(recorder.path)
    assert not evidence.available
    assert "line 5 carries no chain value" in evidence.reason


def test_a_reopened_record_continues_its_chain_and_a_tampered_one_is_refused(tmp_path: Path) -> None:
    recorder = _recorded(tmp_path)
    again = Recorder(tmp_path / "env")
    assert again.fault is None
    assert again.begin(_entry("GET", "/version", "get")) == 3
    assert read_record(again.path, head=again.head).available
    lines = _lines(again)
    _write(again, [lines[0].replace("pods", "nodes"), *lines[1:]])
    reopened = Recorder(tmp_path / "env")
    assert reopened.fault is not None
    assert "not intact" in reopened.fault
    assert recorder.head != again.head


@pytest.mark.parametrize("text", ["[]", "{}", "not json"])
def test_only_json_objects_are_sealed(text: str) -> None:
    with pytest.raises(ValueError, match="JSON object"):
        integrity.Chain().seal(text)
