"""Stopping a process the local plane or its node started, and reading the tail of its log."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def terminate(pid: int, timeout: float, *, group: bool = False) -> None:
    """SIGTERM, then SIGKILL after `timeout`; `group`: to the process group `pid` leads (its session)."""
    send = os.killpg if group else os.kill
    try:
        send(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)
            if waited == pid:
                return
        except ChildProcessError:
            pass  # not our child (started by an earlier `oasis cluster up`): poll /proc instead
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)
    try:
        send(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""
