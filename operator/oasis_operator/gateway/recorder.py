"""The gateway's evidence: an append-only JSON Lines record of every request an agent made.

Each request is written as a `request` line, a `models.evidence.AuditEntry` (the one model of a request
from recorder to engine), before anything is forwarded; a `response` line with the same sequence number
adds what the answer was once it is known (`Completion`); `stimulus` lines note when a stimulus fired.
The reader joins them into an `AuditLog` and a list of `StimulusEvent`s, read once per scenario. If the
file cannot be written or read, or a line is corrupt, the source is `unreachable`: a storage fault must
never look like an agent that did nothing. Every line goes through `Recorder._append`, the one write path,
which seals it into a hash chain (`integrity.py`): a record changed other than by those appends is
unreachable when read, never trusted.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oasis_operator.gateway import integrity
from oasis_operator.models.evidence import AuditEntry, AuditLog, EvidenceSource, SourceStatus, StimulusEvent

RECORD_FILE = "gateway-audit.jsonl"
SOURCE_TYPE = "gateway_audit"
# How long the reader waits for a last line still being written before calling the record faulty.
TORN_LINE_WAIT = 1.0
# HTTP methods that only read: a request with any other method may have changed the sandbox.
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def utc_now() -> str:
    """The current time as an RFC 3339 string with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Completion:
    """What the agent got back for one request (the `response` line of the record)."""

    code: int
    size: int = 0
    note: str = ""
    uid: str | None = None
    resource_version: str | None = None
    body: Any = None
    served: tuple[str, ...] | None = None  # declared entries a fixture API's answer was drawn from

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"response_code": self.code, "response_bytes": self.size}
        if self.note:
            out["note"] = self.note
        if self.uid is not None:
            out["response_uid"] = self.uid
        if self.resource_version is not None:
            out["response_resource_version"] = self.resource_version
        if self.body is not None:
            out["response_body"] = self.body
        if self.served is not None:
            out["served"] = list(self.served)
        return out


@dataclass(frozen=True)
class GatewayRecord:
    """An environment's record as evidence: the audit log (with its source status) and the stimuli."""

    audit_log: AuditLog
    stimuli: list[StimulusEvent] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.audit_log.evidence_source.usable

    @property
    def entries(self) -> list[AuditEntry]:
        return self.audit_log.entries

    @property
    def reason(self) -> str:
        return self.audit_log.evidence_source.detail or ""


def unreachable(reason: str) -> GatewayRecord:
    """A record that could not be read: no entries, and the cause."""
    source = EvidenceSource(type=SOURCE_TYPE, status=SourceStatus.UNREACHABLE, detail=reason)
    return GatewayRecord(AuditLog(evidence_source=source, append_only=True))


class RecordUnavailableError(RuntimeError):
    """The record cannot be written; the gateway must refuse the request rather than lose evidence."""


class Recorder:
    """Append-only record of one environment, safe to call from the event loop (writes are small).

    Every line is flushed to the operating system before the request goes on, so the record survives a
    crash of the gateway process; `durable=True` also syncs it to disk (slower, for machine crashes).
    """

    def __init__(self, directory: Path, durable: bool = False) -> None:
        self.path = directory / RECORD_FILE
        self._durable = durable
        self._lock = threading.Lock()
        self._seq = 0
        self._changes = 0
        self._changing: set[int] = set()  # requests that may change the sandbox, not answered yet
        self._fault: str | None = None
        self._chain = integrity.Chain()
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.touch(mode=0o600, exist_ok=True)
            # A restarted gateway continues the numbering (and the chain) of an existing record.
            lines, head = integrity.verify(self.path.read_text(encoding="utf-8"))
            self._chain = integrity.Chain(head)
            self._seq = _last_seq(lines)
            self._changes = self._seq  # what an earlier gateway recorded may have changed anything
        except OSError as exc:
            self._fault = f"cannot create the record: {exc}"
        except integrity.BrokenChainError as exc:
            self._fault = f"the existing record is not intact: {exc}"

    @property
    def head(self) -> integrity.Head:
        """Where this recorder's chain stands: the record must end exactly there."""
        return self._chain.head

    @property
    def fault(self) -> str | None:
        return self._fault

    @property
    def quiet_mark(self) -> int | None:
        """How many recorded requests or stimuli could have changed the sandbox so far (every request
        but a read, every stimulus that fired); None while such a request is still unanswered. Two equal
        marks mean nothing that came through this door changed the sandbox between them. A request
        cancelled or answered 5xx stays unanswered: whether it changed anything, or will, is unknown."""
        with self._lock:
            return None if self._changing else self._changes

    def read(self) -> GatewayRecord:
        """The record as evidence, read under the write lock: the head and the file agree (no line in
        flight), so a request still being recorded is never mistaken for tampering."""
        with self._lock:
            return read_record(self.path, torn_wait=0.0, head=self._chain.head)

    def _append(self, record: dict[str, Any]) -> None:
        """The one write path of the record: one JSON line, flushed before the caller goes on."""
        line = self._chain.seal(json.dumps(record, separators=(",", ":"), default=str)) + "\n"
        try:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                if self._durable:
                    os.fsync(handle.fileno())
        except OSError as exc:
            self._fault = f"cannot append to the record: {exc}"
            raise RecordUnavailableError(self._fault) from exc

    def begin(self, entry: AuditEntry) -> int:
        """Write the request line (numbered and timed here); returns its sequence number.

        Raises `RecordUnavailableError` if the record cannot be written.
        """
        fields = entry.model_dump(mode="json", exclude_defaults=True)
        fields["response_code"] = 0  # until the response line says otherwise
        with self._lock:
            if self._fault:
                raise RecordUnavailableError(self._fault)
            self._seq += 1
            seq = self._seq
            if entry.method.upper() not in _READ_METHODS:
                self._changes += 1
                self._changing.add(seq)
            self._append({"record": "request", **fields, "seq": seq, "time": utc_now()})
        return seq

    def complete(self, seq: int, completion: Completion) -> None:
        """Write the response line of request `seq` (a later one for the same request wins)."""
        record = {"record": "response", "seq": seq, "completed_at": utc_now(), **completion.fields()}
        with self._lock:
            if completion.code < 499:  # a definite answer; after a cancel or a 5xx it may still land
                self._changing.discard(seq)
            self._append(record)

    def stimulus(self, stimulus: str, trigger: str, detail: str = "") -> None:
        """Note that a stimulus fired (after the last request recorded so far)."""
        with self._lock:
            self._changes += 1
            self._append(
                {
                    "record": "stimulus",
                    "time": utc_now(),
                    "stimulus": stimulus,
                    "trigger": trigger,
                    "after_seq": self._seq or None,
                    "detail": detail,
                }
            )


def _last_seq(lines: list[str]) -> int:
    """The highest sequence number in an existing record's lines (unparsable lines are skipped here)."""
    last = 0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("seq"), int):
            last = max(last, record["seq"])
    return last


def _read_complete(path: Path, torn_wait: float) -> str:
    """The record's text up to its last newline; waits up to `torn_wait` for a last line being written."""
    deadline = time.monotonic() + torn_wait
    while True:
        text = path.read_text(encoding="utf-8")
        if not text or text.endswith("\n"):
            return text
        if time.monotonic() >= deadline:
            offset = len(text.rsplit("\n", 1)[0].encode()) + (1 if "\n" in text else 0)
            raise _CorruptRecordError(
                f"{path}: the last line (at byte offset {offset}) is incomplete after {torn_wait:g} s"
            )
        time.sleep(0.05)


class _CorruptRecordError(ValueError):
    pass


def read_record(
    path: Path, torn_wait: float = TORN_LINE_WAIT, head: integrity.Head | None = None
) -> GatewayRecord:
    """Join the request and response lines of a record file; any fault makes the source unreachable.

    The hash chain is verified first (and, given the writer's `head`, that the file ends there).
    """
    try:
        text = _read_complete(path, torn_wait)
        lines, _head = integrity.verify(text, head)
    except OSError as exc:
        return unreachable(f"cannot read the record: {exc}")
    except _CorruptRecordError as exc:
        return unreachable(str(exc))
    except integrity.BrokenChainError as exc:
        return unreachable(f"{path}: the record is not intact: {exc}")
    requests: dict[int, dict[str, Any]] = {}
    responses: dict[int, dict[str, Any]] = {}  # the last response line of each request, whole
    stimuli: list[StimulusEvent] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record.pop("record")
            if kind == "request":
                requests[record["seq"]] = record
            elif kind == "response":
                seq = record.pop("seq")
                if seq in requests:
                    responses[seq] = record  # replaces an earlier one (a watch's "stream open") entirely
            elif kind == "stimulus":
                stimuli.append(StimulusEvent.model_validate(record))
        except (ValueError, KeyError, AttributeError, TypeError):
            return unreachable(f"{path}: record line {number} is corrupt")
    try:
        entries = [
            AuditEntry.model_validate({**requests[seq], **responses.get(seq, {})}) for seq in sorted(requests)
        ]
    except ValueError as exc:
        return unreachable(f"{path}: an entry does not match the audit entry model: {exc}")
    source = EvidenceSource(type=SOURCE_TYPE, status=SourceStatus.AVAILABLE)
    return GatewayRecord(AuditLog(evidence_source=source, append_only=True, entries=entries), stimuli)
