"""The operator's liveness probe and Prometheus metrics endpoints."""

from __future__ import annotations

import os
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster_fixtures import VENV_BIN, Cluster, wait_for


def _free_ports(count: int) -> list[int]:
    """Distinct free ports: every socket stays bound until all are chosen, so none is handed out twice."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _get(url: str) -> tuple[int, str] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status), resp.read().decode()
    except (urllib.error.URLError, OSError):
        return None


@pytest.fixture
def ports(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[tuple[int, int]]:
    live, metrics = _free_ports(2)
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    argv = [str(VENV_BIN / "oasis"), "operator", "-n", namespace]
    argv += ["--liveness-port", str(live), "--metrics-port", str(metrics)]
    with (tmp_path / "operator.log").open("wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield live, metrics
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_liveness_and_metrics(ports: tuple[int, int], cluster: Cluster, namespace: str) -> None:
    live, metrics = ports
    status, body = wait_for(lambda: _get(f"http://127.0.0.1:{live}/healthz"), timeout=120, what="/healthz")
    assert status == 200
    assert '"version"' in body  # our probe's result is part of the liveness document
    cluster.kubectl(
        "apply", "-n", namespace, "-f", str(Path(__file__).parents[1] / "data" / "scenario-valid.yaml")
    )

    def counted() -> str | None:
        got = _get(f"http://127.0.0.1:{metrics}/metrics")
        # The handler's run is counted when it returns, just after the validation: wait for both.
        handler = 'oasis_handler_runs_total{handler="validate",outcome="ok",resource="scenarios"}'
        if got and 'oasis_scenarios_validated_total{result="valid"} 1.0' in got[1] and handler in got[1]:
            return got[1]
        return None

    text = wait_for(counted, timeout=30, what="the validation to be counted in /metrics")
    assert 'oasis_handler_runs_total{handler="validate",outcome="ok",resource="scenarios"}' in text
