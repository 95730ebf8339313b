"""A test session's control plane dies with the process that started it, also when that one is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

START = """
import sys
from pathlib import Path
from oasis_operator.localcluster import LocalControlPlane
plane = LocalControlPlane(run_dir=Path(sys.argv[1]), die_with_parent=True)
plane.start()
print("started", flush=True)
sys.stdin.read()  # until killed
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _binary(pid: int) -> str:
    """The name of the program `pid` runs (its argv[0])."""
    return Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()).name


def test_components_stop_when_their_starter_is_killed(tmp_path: Path) -> None:
    run_dir = tmp_path / "plane"
    starter = subprocess.Popen(
        [sys.executable, "-c", START, str(run_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    pids: dict[str, int] = {}
    try:
        assert starter.stdout is not None
        assert starter.stdout.readline().strip() == "started"
        pids = json.loads((run_dir / "state.json").read_text())["pids"]
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
        assert all(_alive(pid) for pid in pids.values())
        # Each component runs its own binary (setpriv exec'd into it; the pid is the component's). The
        # exec can still be under way for the last one started (kwok) on a loaded machine: give it time.
        for component, pid in pids.items():
            deadline = time.monotonic() + 20
            while _binary(pid) != component and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _binary(pid) == component
        starter.send_signal(signal.SIGKILL)  # no finaliser, no stop(): only the parent-death signal
        starter.wait(10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids.values()):
            time.sleep(0.5)
        assert not [c for c, pid in pids.items() if _alive(pid)]
    finally:
        starter.kill()
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
