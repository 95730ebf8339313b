"""`oasis cluster up|status|env|down` as a user runs them, beside the session's own control plane."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from tests.cluster_fixtures import KUBECTLS, VENV_BIN, Cluster


def _oasis(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "oasis"), *args], capture_output=True, text=True, timeout=180, check=False
    )


def test_up_status_env_down(tmp_path: Path, cluster: Cluster) -> None:
    run_dir = tmp_path / "cluster"
    base = ("cluster", "--run-dir", str(run_dir))
    try:
        up = _oasis(*base, "up")
        assert up.returncode == 0, up.stderr
        assert f"kubeconfig: {run_dir / 'kubeconfig'}" in up.stdout

        again = _oasis(*base, "up")  # idempotent: finds the running plane, starts nothing new
        assert again.returncode == 0
        status = json.loads(_oasis(*base, "status", "-o", "json").stdout)
        assert status["ready"] is True
        pids = {name: c["pid"] for name, c in status["components"].items()}
        assert all(c["running"] for c in status["components"].values())
        assert {"kube-controller-manager", "kube-scheduler", "kwok"} <= set(pids)

        env = _oasis(*base, "env").stdout.strip()
        assert env == f"export KUBECONFIG={run_dir / 'kubeconfig'}"
        assert (run_dir / "audit.log").exists()
    finally:
        down = _oasis(*base, "down")
    assert down.returncode == 0
    stopped = "kwok, kube-scheduler, kube-controller-manager, kube-apiserver, etcd"  # the reverse of start
    assert down.stdout.strip() == f"stopped: {stopped}"
    for pid in pids.values():
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    after = _oasis(*base, "status")
    assert after.returncode == 3
    # Stopping one run directory's plane left the session's plane alone.
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"


def test_down_up_keeps_the_ports(tmp_path: Path, cluster: Cluster) -> None:
    """After `down`, the API server's port has connections in TIME_WAIT; `up` listens there again."""
    run_dir = tmp_path / "cluster"
    base = ("cluster", "--run-dir", str(run_dir))
    try:
        assert _oasis(*base, "up").returncode == 0
        first = json.loads((run_dir / "state.json").read_text())
        kubeconfig = (run_dir / "kubeconfig").read_text()
        watch = subprocess.Popen(  # a client still connected when the plane goes down
            [KUBECTLS["server"], "--kubeconfig", str(run_dir / "kubeconfig"), "get", "ns", "-w"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            assert _oasis(*base, "down").returncode == 0
        finally:
            watch.kill()
            watch.wait()
        # Which side closes first at shutdown varies; make sure the old API port has a connection in
        # TIME_WAIT whose server side was on it (what made a plain bind probe pick a new port).
        _leave_time_wait(first["api_port"])
        assert _in_time_wait(first["api_port"])
        again = _oasis(*base, "up")
        assert again.returncode == 0, again.stderr
        second = json.loads((run_dir / "state.json").read_text())
        ports = ("api_port", "etcd_client_port", "etcd_peer_port")
        assert {p: second[p] for p in ports} == {p: first[p] for p in ports}
        assert (run_dir / "kubeconfig").read_text() == kubeconfig  # handed-out kubeconfigs stay valid
        assert _kubectl(run_dir, "get", "--raw", "/readyz").stdout.strip() == "ok"
    finally:
        _oasis(*base, "down")


def _kubectl(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTLS["server"], "--kubeconfig", str(run_dir / "kubeconfig"), *args],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip


def _leave_time_wait(port: int) -> None:
    """Serve one connection on `port` (as Go servers bind: SO_REUSEADDR) and close it server side first."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        with socket.create_connection(("127.0.0.1", port)) as client:
            served, _ = listener.accept()
            served.close()
            client.recv(1)


def _in_time_wait(port: int) -> bool:
    """Whether a TCP connection on local port `port` is in TIME_WAIT (/proc/net/tcp state 06)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "06":
            return True
    return False
