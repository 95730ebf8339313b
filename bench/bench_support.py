"""Shared measuring helpers of the benches: process CPU and memory from /proc, the API server's floor."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi, V1Namespace, V1ObjectMeta

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.crdgen import build_crds
from oasis_operator.kube import api_client, apply_crds, request, resource_path
from oasis_operator.localcluster import LocalControlPlane

TICKS = os.sysconf("SC_CLK_TCK")
TERMINAL = frozenset({"Completed", "Aborted", "Failed"})  # an OASISEvaluation phase a run ends in


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process (its own, not its children's); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of stat)


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return 0.0
    return 0.0


class ProcessWatch:
    """CPU seconds of named processes between `begin` and `end`; the first one's peak RSS meanwhile."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._start: dict[str, float] = {}
        self.peak_rss_mib = 0.0

    def begin(self) -> None:
        self._start = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self.peak_rss_mib = 0.0
        self.sample()

    def sample(self) -> None:
        first = next(iter(self.pids.values()))
        self.peak_rss_mib = max(self.peak_rss_mib, rss_mib(first))

    def end(self) -> dict[str, float]:
        self.sample()
        return {name: cpu_seconds(pid) - self._start[name] for name, pid in self.pids.items()}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))]


def api_floor(api: ApiClient, count: int = 100, namespace: str = "default") -> dict[str, float]:
    """p50 of sequential ConfigMap creates and GETs: what one API call costs on this server now."""
    creates, gets = [], []
    names = [f"bench-floor-{os.getpid()}-{i}" for i in range(count)]
    for name in names:
        body = {"metadata": {"name": name}, "data": {"k": "v"}}
        t0 = time.perf_counter()
        request(api, "POST", resource_path("ConfigMap", namespace), body)
        creates.append(time.perf_counter() - t0)
    for name in names:
        t0 = time.perf_counter()
        request(api, "GET", resource_path("ConfigMap", namespace, name))
        gets.append(time.perf_counter() - t0)
    for name in names:
        request(api, "DELETE", resource_path("ConfigMap", namespace, name))
    return {"create": statistics.median(creates), "get": statistics.median(gets)}


def load_note() -> str:
    one, five, fifteen = os.getloadavg()
    return (
        f"Load average when the bench ended: {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on "
        f"{os.cpu_count()} cores."
    )


def interrupted(signum: int, _frame: object) -> None:
    """SIGTERM handler of the benches: unwind like Ctrl-C, so their operator and plane are stopped."""
    raise KeyboardInterrupt(f"signal {signum}")


def start_operator(
    kubeconfig: Path, audit_log: Path, namespace: str, work: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`oasis operator` watching `namespace` of the bench's plane, its log in `work/operator.log`."""
    bin_dir = Path(sys.executable).parent
    log = (work / "operator.log").open("wb")
    argv = [str(bin_dir / "oasis"), "operator", "-n", namespace, "--liveness-port", "0",
            "--metrics-port", "0", "--data-dir", str(work / "data"),
            "--sandbox-audit-log", str(audit_log)]  # fmt: skip
    environment = {**os.environ, "KUBECONFIG": str(kubeconfig), **(env or {})}
    return subprocess.Popen(argv, env=environment, stdout=log, stderr=log)


def ensure_namespace(api: ApiClient, name: str) -> None:
    """Create namespace `name` unless it exists."""
    core = CoreV1Api(api)
    if name not in [n.metadata.name for n in core.list_namespace().items if n.metadata]:
        core.create_namespace(V1Namespace(metadata=V1ObjectMeta(name=name)))


def evaluation_status(custom: CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    """An OASISEvaluation's status as stored (empty before the operator wrote one)."""
    obj = cast(
        dict[str, Any],
        custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", name),
    )
    return cast(dict[str, Any], obj.get("status") or {})


@contextmanager
def bench_cluster(work: Path, namespace: str) -> Iterator[tuple[LocalControlPlane, ApiClient]]:
    """A local plane in `work`/cluster with the CRDs applied and `namespace` made; stopped on the way out."""
    plane = LocalControlPlane(run_dir=work / "cluster")
    plane.start()
    try:
        api = api_client(plane.kubeconfig)
        apply_crds(api, build_crds().values())
        ensure_namespace(api, namespace)
        yield plane, api
    finally:
        plane.stop()


@dataclass(frozen=True)
class Finished:
    """One evaluation run to its end by `run_evaluation`."""

    status: dict[str, Any]
    wall: float  # seconds from creation to a terminal phase
    cpu: dict[str, float]  # CPU seconds of each watched process meanwhile
    load: tuple[float, float]  # 1-minute load average before and after


def run_evaluation(
    custom: CustomObjectsApi, namespace: str, body: dict[str, Any], watch: ProcessWatch
) -> Finished:
    """Create the evaluation, poll it to a terminal phase while sampling the processes, delete it."""
    name = body["metadata"]["name"]
    load_before = os.getloadavg()[0]
    watch.begin()
    started = time.monotonic()
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", body)
    while True:
        status = evaluation_status(custom, namespace, name)
        watch.sample()
        if status.get("phase") in TERMINAL:
            break
        time.sleep(0.5)
    wall = time.monotonic() - started
    cpu = watch.end()
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", name)
    return Finished(status, wall, cpu, (load_before, os.getloadavg()[0]))


def stop_operator(operator: subprocess.Popen[bytes] | None) -> None:
    """Stop an operator `start_operator` (or a bench's own start) gave, if one was started."""
    if operator is not None:
        operator.terminate()
        operator.wait(timeout=60)


def emit(text: str, out: str | None) -> None:
    """Print a bench's result and, with `--out FILE`, append it to FILE."""
    print(text)
    if out:
        with Path(out).open("a") as handle:
            handle.write(text + "\n")
