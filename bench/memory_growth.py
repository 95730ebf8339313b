"""What grows in one operator process over successive whole-profile evaluations (null agent).

Usage: .venv/bin/python bench/memory_growth.py [--evaluations 3] [--parallelism 4] [--frames 8]
       [--out memory_growth]

Starts its own local control plane and one operator under `bench/traced_operator.py`, then runs the
evaluations one after another. Before the first and after each one (finished, its background teardown
drained) it asks the operator for a dump (SIGUSR1): live objects by type after a full collection and,
with `--frames` > 0, a tracemalloc snapshot. It reports the operator's RSS at each dump, the types whose
live count grew most from the first evaluation's end to the last one's, and the allocation sites that
grew most over the same span (so start-up and first-use caches are left out). Writes
bench/results/NAME.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from kubernetes.client import CustomObjectsApi

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import (
    bench_cluster,
    evaluation_status,
    interrupted,
    load_note,
    rss_mib,
    stop_operator,
)
from null_agent import NullAgent

from oasis_operator import API_GROUP, API_VERSION

RESULTS = Path(__file__).parent / "results"
NAMESPACE = "bench-memory"
TERMINAL = {"Completed", "Aborted", "Failed"}


def start(kubeconfig: Path, audit_log: Path, work: Path, frames: int) -> subprocess.Popen[bytes]:
    log = (work / "operator.log").open("wb")
    argv = [sys.executable, str(Path(__file__).parent / "traced_operator.py"), str(work / "dumps"),
            "operator", "-n", NAMESPACE, "--liveness-port", "0", "--metrics-port", "0",
            "--data-dir", str(work / "data"), "--sandbox-audit-log", str(audit_log)]  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "OASIS_BENCH_TRACEMALLOC": str(frames)}
    return subprocess.Popen(argv, env=env, stdout=log, stderr=log)


def wait_ready(operator: subprocess.Popen[bytes], work: Path) -> None:
    """Until the operator's log says its start-up handlers finished."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if operator.poll() is not None:
            raise RuntimeError(f"the operator exited: see {work / 'operator.log'}")
        if b"start_services' succeeded" in (work / "operator.log").read_bytes():
            return
        time.sleep(1)
    raise RuntimeError("the operator did not start in 600 s")


def dump(operator: subprocess.Popen[bytes], work: Path, index: int) -> float:
    os.kill(operator.pid, signal.SIGUSR1)
    done = work / "dumps" / f"{index}.done"
    while not done.exists():
        time.sleep(0.5)
    return rss_mib(operator.pid)


def run_one(custom: CustomObjectsApi, name: str, level: int, url: str) -> dict[str, Any]:
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "OASISEvaluation", "metadata": {"name": name},
        "spec": {"profile": {"name": "software-infrastructure"}, "parallelism": level,
                 "agent": {"http": {"url": url, "timeoutSeconds": 60}}},
    }  # fmt: skip
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", body)
    while True:
        status = evaluation_status(custom, NAMESPACE, name)
        if status.get("phase") in TERMINAL:
            return status
        time.sleep(1.0)


def type_growth(work: Path, first: int, last: int, top: int = 25) -> list[tuple[str, int, int]]:
    before = json.loads((work / "dumps" / f"{first}.types.json").read_text())
    after = json.loads((work / "dumps" / f"{last}.types.json").read_text())
    grown = [(name, before.get(name, 0), count) for name, count in after.items()]
    grown.sort(key=lambda t: t[2] - t[1], reverse=True)
    return [g for g in grown[:top] if g[2] > g[1]]


def site_growth(work: Path, first: int, last: int, top: int = 25) -> list[str]:
    path = work / "dumps"
    if not (path / f"{first}.snapshot").exists():
        return []
    before = tracemalloc.Snapshot.load(str(path / f"{first}.snapshot"))
    after = tracemalloc.Snapshot.load(str(path / f"{last}.snapshot"))
    lines = []
    for stat in after.compare_to(before, "traceback")[:top]:
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback]
        lines.append(f"| {stat.size_diff / 1024:+.0f} | {stat.count_diff:+d} | {' < '.join(frames[:6])} |")
    return lines


def report(args: argparse.Namespace, rss: list[float], phases: list[str], work: Path) -> str:
    first, last = 1, len(rss) - 1
    lines = [
        "# Operator memory over successive whole-profile evaluations (null agent)",
        "",
        f"`bench/memory_growth.py {' '.join(sys.argv[1:])}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores. One operator "
        f"process, evaluations run one after another at parallelism {args.parallelism}"
        + (f", tracemalloc on ({args.frames} frames: RSS includes its overhead)" if args.frames else "")
        + ".",
        "",
        "| dump | after | operator RSS (MiB) | after malloc_trim (MiB) |",
        "| --- | --- | --- | --- |",
    ]
    for i, after_dump in enumerate(rss):
        trim_file = work / "dumps" / f"{i}.rss.json"
        trim = json.loads(trim_file.read_text()) if trim_file.exists() else {}
        before = trim.get("before", after_dump * 1024) / 1024
        what = "start" if i == 0 else f"evaluation {i} ({phases[i - 1]})"
        lines.append(f"| {i} | {what} | {before:.0f} | {trim.get('after', after_dump * 1024) / 1024:.0f} |")
    if last > first:
        lines += ["", f"Live objects by type, dump {first} → {last} (top growth):", "",
                  "| type | before | after |", "| --- | --- | --- |"]  # fmt: skip
        lines += [f"| `{n}` | {b} | {a} |" for n, b, a in type_growth(work, first, last)]
        sites = site_growth(work, first, last)
        if sites:
            lines += ["", f"Allocation sites, dump {first} → {last} (top growth, innermost frame first):",
                      "", "| KiB | blocks | where |", "| --- | --- | --- |", *sites]  # fmt: skip
    lines += ["", load_note()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--frames", type=int, default=8, help="tracemalloc frames (0: type counts only)")
    parser.add_argument("--out", default="memory_growth")
    parser.add_argument("--keep", type=Path, default=None, help="copy the dumps here for later study")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupted)
    with tempfile.TemporaryDirectory(prefix="oasis-bench-memory-") as tmp, NullAgent() as url:
        work = Path(tmp)
        operator = None
        rss: list[float] = []
        phases: list[str] = []
        with bench_cluster(work, NAMESPACE) as (plane, api):
            try:
                operator = start(plane.kubeconfig, plane.audit_log, work, args.frames)
                wait_ready(operator, work)
                rss.append(dump(operator, work, 0))
                custom = CustomObjectsApi(api)
                for i in range(args.evaluations):
                    status = run_one(custom, f"grow-{i}", args.parallelism, url)
                    phases.append(f"{status.get('phase')}/{(status.get('summary') or {}).get('safety')}")
                    rss.append(dump(operator, work, i + 1))
                    print(f"evaluation {i}: {phases[-1]}, RSS {rss[-1]:.0f} MiB", flush=True)
                text = report(args, rss, phases, work)
                if args.keep is not None:
                    subprocess.run(["cp", "-r", str(work / "dumps"), str(args.keep)], check=True)
            finally:
                stop_operator(operator)
    (RESULTS / f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
