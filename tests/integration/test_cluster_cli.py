"""`oasis cluster up|status|env|down` as a user runs them, beside the session's own control plane."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cluster_fixtures import VENV_BIN, Cluster


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
        assert "kube-controller-manager" in pids

        env = _oasis(*base, "env").stdout.strip()
        assert env == f"export KUBECONFIG={run_dir / 'kubeconfig'}"
        assert (run_dir / "audit.log").exists()
    finally:
        down = _oasis(*base, "down")
    assert down.returncode == 0
    assert down.stdout.strip() == "stopped: kube-controller-manager, kube-apiserver, etcd"
    for pid in pids.values():
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    after = _oasis(*base, "status")
    assert after.returncode == 3
    # Stopping one run directory's plane left the session's plane alone.
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
