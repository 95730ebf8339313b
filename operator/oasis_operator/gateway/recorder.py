"""The gateway's evidence: an append-only JSON Lines record of every request an agent made.

Each request is written as a `request` line before anything is forwarded, and a `response` line with the
same sequence number once the answer is known; `stimulus` lines note when a stimulus fired. The reader
joins them into `GatewayAuditEntry` rows. If the file cannot be written or read, the source is reported
`unreachable`: a storage fault must never look like an agent that did nothing.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.gateway import integrity

RECORD_FILE = "gateway-audit.jsonl"
EvidenceStatus = Literal["available", "unreachable"]


def utc_now() -> str:
    """The current time as an RFC 3339 string with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class GatewayAuditEntry(BaseModel):
    """One agent request as the gateway saw it, completed with the answer it got."""

    model_config = ConfigDict(extra="ignore")

    seq: int
    time: str
    method: str
    path: str = Field(description="Path and query exactly as the agent sent them.")
    api: str = Field(default="kubernetes", description="kubernetes, logs, prometheus, traces, …")
    authenticated: bool = True
    verb: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = Field(default="", description="The namespace as the agent named it.")
    sandbox_namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""
    request_body: Any = None
    response_code: int | None = Field(default=None, description="None: the request never completed.")
    response_bytes: int | None = None
    completed_at: str | None = None
    note: str = ""


class StimulusRecord(BaseModel):
    """A stimulus the gateway applied, and when."""

    model_config = ConfigDict(extra="ignore")

    time: str
    stimulus: str
    trigger: str
    after_seq: int | None = None
    detail: str = ""


class GatewayEvidence(BaseModel):
    """What the engine receives as `evidence_source {type: gateway_audit}`."""

    type: Literal["gateway_audit"] = "gateway_audit"
    status: EvidenceStatus
    reason: str = ""
    entries: list[GatewayAuditEntry] = Field(default_factory=list)
    stimuli: list[StimulusRecord] = Field(default_factory=list)


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
        self._fault: str | None = None
        self._chain = integrity.Chain()
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.touch(mode=0o600, exist_ok=True)
            # A restarted gateway continues the numbering (and the chain) of an existing record.
            lines, head = integrity.verify(self.path.read_text(encoding="utf-8"))
            self._chain = integrity.Chain(head)
            self._seq = max((e.seq for e in _join(lines).entries), default=0)
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

    def _append(self, record: dict[str, Any]) -> None:
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

    def begin(self, **fields: Any) -> int:
        """Write the request line; returns its sequence number. Raises if the record cannot be written."""
        with self._lock:
            if self._fault:
                raise RecordUnavailableError(self._fault)
            self._seq += 1
            seq = self._seq
            self._append({"record": "request", "seq": seq, "time": utc_now(), **fields})
        return seq

    def complete(self, seq: int, code: int, size: int, note: str = "") -> None:
        """Write the response line of request `seq`."""
        record = {"record": "response", "seq": seq, "time": utc_now(), "code": code, "bytes": size}
        if note:
            record["note"] = note
        with self._lock:
            self._append(record)

    def stimulus(self, stimulus: str, trigger: str, detail: str = "") -> None:
        """Note that a stimulus fired (after the last request recorded so far)."""
        with self._lock:
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


def read_evidence(path: Path, head: integrity.Head | None = None) -> GatewayEvidence:
    """Join the request and response lines of a record file; any fault makes the source unreachable.

    The hash chain is verified first (and, given the writer's `head`, that the file ends there): a record
    changed by anything but the gateway's own appends is unreachable, never trusted.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return GatewayEvidence(status="unreachable", reason=f"cannot read the record: {exc}")
    try:
        lines, _head = integrity.verify(text, head)
    except integrity.BrokenChainError as exc:
        return GatewayEvidence(status="unreachable", reason=f"the record is not intact: {exc}")
    return _join(lines)


def _join(lines: list[str]) -> GatewayEvidence:
    requests: dict[int, dict[str, Any]] = {}
    stimuli: list[StimulusRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record.pop("record")
        except (ValueError, KeyError, AttributeError):
            return GatewayEvidence(status="unreachable", reason=f"record line {number} is corrupt")
        if kind == "request":
            requests[record["seq"]] = record
        elif kind == "response" and record.get("seq") in requests:
            entry = requests[record["seq"]]
            # The last response line wins: a stream is noted when it opens and again when it ends.
            entry.update(
                response_code=record.get("code"),
                response_bytes=record.get("bytes"),
                completed_at=record.get("time"),
                note=record.get("note", ""),
            )
        elif kind == "stimulus":
            stimuli.append(StimulusRecord.model_validate(record))
    entries = [GatewayAuditEntry.model_validate(requests[seq]) for seq in sorted(requests)]
    return GatewayEvidence(status="available", entries=entries, stimuli=stimuli)
