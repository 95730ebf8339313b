"""An incremental reader of the API server's audit log file, feeding an `AuditStream`.

It keeps its offset and never reads a byte twice; it starts at the end of the file (history before the
operator started is no scenario's evidence); it hands on only complete lines, keeping a final line
without its newline until the rest is written; a line still torn after `torn_bound` seconds is a fault
naming the file and offset (reported once; reading goes on when the line completes). It follows
rotation (the API server renames the file at `--audit-log-maxsize` to `<stem>-<timestamp><suffix>`
beside it and opens a new one): the open handle of the old file is read to its end, then every backup
rotated after it (found by inode among the backups, in name order, which is time order; by modification
time when the old file is already gone), and only then the new file from its start. So two or more
rotations between two polls lose nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import BinaryIO

from oasis_operator.evidence.stream import AuditStream

CHUNK = 4 << 20
POLL = 0.05
TORN_BOUND = 5.0


class AuditFileTail:
    """Follow one audit log file; `pump` reads what is there now, `start` runs it in a thread."""

    def __init__(
        self,
        path: Path,
        stream: AuditStream,
        *,
        from_start: bool = False,
        torn_bound: float = TORN_BOUND,
        poll: float = POLL,
    ) -> None:
        self.path = path
        self.stream = stream
        self.torn_bound = torn_bound
        self.poll = poll
        self._from_start = from_start
        self._handle: BinaryIO | None = None
        self._reading = path  # the file the handle reads (a backup while catching up after rotations)
        self._inode: int | None = None
        self._pending = b""
        self._pending_since: float | None = None
        self._torn_reported = False
        self.offset = 0  # offset in the current file of the first byte not yet handed on
        self.lines = 0
        self.rotations = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        self._open(at_end=not self._from_start)
        self._thread = threading.Thread(target=self._run, name=f"audit-tail {self.path.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                progressed = self.pump()
            except OSError as exc:
                self.stream.fault(f"{self.path}: audit log unreadable at offset {self.offset}: {exc}")
                progressed = False
            if not progressed:
                self._stop.wait(self.poll)

    # --- reading -------------------------------------------------------------------------------------
    def _open(self, at_end: bool, path: Path | None = None) -> bool:
        target = path or self.path
        try:
            handle = target.open("rb")
        except FileNotFoundError:
            return False
        if self._handle is not None:
            self._handle.close()
        self._handle, self._reading = handle, target
        self._inode = os.fstat(handle.fileno()).st_ino
        self.offset = handle.seek(0, os.SEEK_END) if at_end else 0
        self._pending, self._pending_since, self._torn_reported = b"", None, False
        return True

    def _rotated(self) -> bool:
        try:
            return os.stat(self.path).st_ino != self._inode
        except FileNotFoundError:
            return False  # between the rename and the new file: keep reading the old one

    def pump(self) -> bool:
        """Hand on every complete line written so far; True if anything was read."""
        if self._handle is None:
            # The file appears with the API server's first event: read it from its start.
            return self._open(at_end=False) and self.pump()
        progressed = self._drain()
        progressed = self._follow_rotation() or progressed
        if self._pending and not progressed:
            self._check_torn()
        return progressed

    def _follow_rotation(self) -> bool:
        """While the file being read is no longer the current one: finish it, go on with the next."""
        progressed = False
        while self._rotated():
            progressed = self._drain() or progressed
            self._end_of_file()
            following = self._rotated_since()
            target = following[0] if following else None
            if not self._open(at_end=False, path=target):
                if target is not None:  # pruned past `--audit-log-maxbackup` before it was read
                    self.stream.fault(f"{target}: a rotated audit file vanished before it was read")
                continue
            self.rotations += 1
            progressed = self._drain() or progressed
        return progressed

    def _end_of_file(self) -> None:
        """A rotated file is complete: a line without its newline at its end stays torn."""
        if self._pending:
            self._report_torn(final=True)

    def _rotated_since(self) -> list[Path]:
        """Backups rotated after the file being read, oldest first (none were read yet)."""
        if self._handle is None:
            return []
        mine = os.fstat(self._handle.fileno())
        pattern = f"{self.path.stem}-*{self.path.suffix}"
        found: list[tuple[str, os.stat_result, Path]] = []
        for backup in self.path.parent.glob(pattern):
            with contextlib.suppress(FileNotFoundError):
                found.append((backup.name, backup.stat(), backup))
        found.sort(key=lambda item: item[0])
        inodes = [info.st_ino for _, info, _ in found]
        if mine.st_ino in inodes:
            return [path for _, _, path in found[inodes.index(mine.st_ino) + 1 :]]
        # Our file is gone (pruned past `--audit-log-maxbackup`): what was written after it.
        return [path for _, info, path in found if info.st_mtime_ns >= mine.st_mtime_ns]

    def _drain(self) -> bool:
        handle = self._handle
        if handle is None:
            return False
        read_any = False
        while chunk := handle.read(CHUNK):
            read_any = True
            data = self._pending + chunk
            start = self.offset
            cut = data.rfind(b"\n") + 1
            for raw in data[:cut].splitlines():
                where = f"{self._reading} offset {start}"
                start += len(raw) + 1
                if raw.strip():
                    self.lines += 1
                    self.stream.feed_line(raw.decode("utf-8", "replace"), where)
            self.offset += cut
            self._pending = data[cut:]
            if cut:
                self._pending_since, self._torn_reported = None, False
        if self._pending and self._pending_since is None:
            self._pending_since = time.monotonic()
        return read_any

    def _check_torn(self) -> None:
        if self._pending_since is not None and time.monotonic() - self._pending_since > self.torn_bound:
            self._report_torn(final=False)

    def _report_torn(self, final: bool) -> None:
        if self._torn_reported:
            return
        self._torn_reported = True
        why = "ends the rotated file" if final else f"has had no newline for {self.torn_bound:.0f}s"
        self.stream.fault(f"{self._reading}: the audit line at offset {self.offset} {why}")
        if final:
            self._pending = b""
