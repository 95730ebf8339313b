"""Wall time of a whole-profile evaluation at parallelism 1 and 4, and the operator's peak memory.

Usage: .venv/bin/python bench/evaluation_wall_time.py [PARALLELISM ...]   (default: 1 4)
Starts its own local control plane in a temporary directory (or uses $OASIS_BENCH_KUBECONFIG with
$OASIS_BENCH_AUDIT_LOG), then `oasis operator` as a user runs it, and evaluates the `careful` reference
agent (command adapter) on all 50 shipped scenarios once per parallelism. Writes a markdown table.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_support import ensure_namespace, evaluation_status
from kubernetes.client import CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.crdgen import build_crds
from oasis_operator.kube import api_client, apply_crds
from oasis_operator.localcluster import LocalControlPlane

OUT = Path(__file__).parent / "results" / "evaluation_wall_time.md"
BIN = Path(sys.executable).parent
NAMESPACE = "bench-eval"


class RssSampler(threading.Thread):
    """Polls a process's resident set size; `peak` is the largest seen (and VmHWM when readable)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self.stop = threading.Event()

    def _status(self, key: str) -> int:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        except OSError:
            return 0
        return 0

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak_kib = max(self.peak_kib, self._status("VmRSS"), self._status("VmHWM"))
            time.sleep(0.5)


def _evaluation(parallelism: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": f"careful-p{parallelism}"},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": {
                "command": {
                    "command": [str(BIN / "oasis"), "agent", "run", "--policy", "careful"],
                    "env": {"OASIS_KUBECTL": str(BIN / "kubectl")},
                    "timeoutSeconds": 120,
                }
            },
            "parallelism": parallelism,
        },
    }


def _seconds(status: dict[str, Any]) -> float:
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return (
        datetime.strptime(status["completedAt"], fmt) - datetime.strptime(status["startedAt"], fmt)
    ).total_seconds()


def run(kubeconfig: Path, audit_log: Path | None, levels: list[int], workdir: Path) -> list[str]:
    api = api_client(kubeconfig)
    apply_crds(api, build_crds().values())
    custom = CustomObjectsApi(api)
    ensure_namespace(api, NAMESPACE)
    command = [
        str(BIN / "oasis"),
        "operator",
        "-n",
        NAMESPACE,
        "--liveness-port",
        "0",
        "--metrics-port",
        "0",
        "--data-dir",
        str(workdir / "data"),
    ]
    if audit_log:
        command += ["--sandbox-audit-log", str(audit_log)]
    log = (workdir / "operator.log").open("wb")
    operator = subprocess.Popen(
        command, env={**os.environ, "KUBECONFIG": str(kubeconfig)}, stdout=log, stderr=log
    )
    sampler = RssSampler(operator.pid)
    sampler.start()
    rows = []
    try:
        for level in levels:
            body = _evaluation(level)
            name = body["metadata"]["name"]
            started = time.monotonic()
            custom.create_namespaced_custom_object(
                API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", body
            )
            while True:
                status = evaluation_status(custom, NAMESPACE, name)
                if status.get("phase") in {"Completed", "Aborted", "Failed"}:
                    break
                time.sleep(2)
            wall = time.monotonic() - started
            progress = status.get("progress") or {}
            rows.append(
                f"| {level} | {status['phase']} | {status.get('summary', {}).get('safety')} | "
                f"{progress.get('done')}/{progress.get('total')} | {wall:.0f} | {_seconds(status):.0f} | "
                f"{wall / max(progress.get('done') or 1, 1):.1f} |"
            )
            custom.delete_namespaced_custom_object(
                API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", name
            )
            time.sleep(5)
    finally:
        sampler.stop.set()
        sampler.join()
        operator.terminate()
        operator.wait(timeout=60)
        log.close()
        api.close()  # type: ignore[no-untyped-call]
    return [
        "# Whole-profile evaluation: wall time and operator memory",
        "",
        "The `careful` reference agent (command adapter, real kubectl through the gateway) on all 50 shipped",
        "scenarios of the SI profile, one evaluation per parallelism, on the local control plane",
        f"({os.cpu_count()} cores, Python {platform.python_version()}). Wall time runs from `kubectl create`",
        "to a terminal phase; status time from `status.startedAt` to `status.completedAt` (whole seconds).",
        "",
        "| parallelism | phase | safety | done/total | wall (s) | status (s) | s per scenario |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Operator peak resident memory over the whole bench: {sampler.peak_kib / 1024:.0f} MiB "
        "(VmHWM/VmRSS of the `oasis operator` process; the agents and kubectl run as separate processes).",
        "",
    ]


def main() -> None:
    levels = [int(a) for a in sys.argv[1:]] or [1, 4]
    given = os.environ.get("OASIS_BENCH_KUBECONFIG")
    with tempfile.TemporaryDirectory(prefix="oasis-bench-") as tmp:
        workdir = Path(tmp)
        if given:
            audit = os.environ.get("OASIS_BENCH_AUDIT_LOG")
            lines = run(Path(given), Path(audit) if audit else None, levels, workdir)
        else:
            plane = LocalControlPlane(run_dir=workdir / "cluster")
            plane.start()
            try:
                lines = run(plane.kubeconfig, plane.audit_log, levels, workdir)
            finally:
                plane.stop()
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
