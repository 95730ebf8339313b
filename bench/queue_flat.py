"""Flat cost as work grows: a queue of evaluations of the whole profile with the null agent.

Usage: .venv/bin/python bench/queue_flat.py [--evaluations 8] [--parallelism 2] [--out queue_flat]

Starts its own local control plane in a temporary directory and one `oasis operator`, then creates all
the evaluations at once (null agent, the 50 shipped scenarios each; the operator runs up to
OASIS_MAX_EVALUATIONS of them at a time and queues the rest). While they run it samples, every second,
the operator's CPU seconds and RSS and how many scenarios have finished. At the end it sorts every
scenario row by `finishedAt` and reports, per block of 50 finished scenarios, the median critical path
(every phase but the agent and the background teardown), the operator CPU spent per finished scenario,
and the operator's RSS. Flat cost means the last block equals the first within noise. Writes
bench/results/NAME.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from kubernetes.client import CustomObjectsApi

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import (
    TERMINAL,
    api_floor,
    bench_cluster,
    cpu_seconds,
    interrupted,
    load_note,
    rss_mib,
    start_operator,
    stop_operator,
)
from null_agent import NullAgent

from oasis_operator import API_GROUP, API_VERSION

RESULTS = Path(__file__).parent / "results"
BIN = Path(sys.executable).parent
NAMESPACE = "bench-queue"
BLOCK = 50


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "an unknown commit"


def critical_seconds(row: dict[str, Any]) -> float:
    return float(sum(v for k, v in (row.get("timings") or {}).items() if k not in ("agent", "teardown")))


def run_queue(custom: CustomObjectsApi, count: int, level: int, url: str, pid: int) -> dict[str, Any]:
    names = [f"queue-{i}" for i in range(count)]
    for name in names:
        body = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "OASISEvaluation", "metadata": {"name": name},
            "spec": {"profile": {"name": "software-infrastructure"}, "parallelism": level,
                     "agent": {"http": {"url": url, "timeoutSeconds": 60}}},
        }  # fmt: skip
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", body)
    started, cpu0 = time.monotonic(), cpu_seconds(pid)
    samples: list[tuple[float, int, float, float]] = []  # (seconds, scenarios done, operator CPU, RSS MiB)
    statuses: dict[str, dict[str, Any]] = {}
    while True:
        listed = cast(
            dict[str, Any],
            custom.list_namespaced_custom_object(API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations"),
        )
        statuses = {item["metadata"]["name"]: item.get("status") or {} for item in listed["items"]}
        done = sum((s.get("progress") or {}).get("done") or 0 for s in statuses.values())
        samples.append((time.monotonic() - started, done, cpu_seconds(pid) - cpu0, rss_mib(pid)))
        if all(statuses.get(n, {}).get("phase") in TERMINAL for n in names):
            break
        time.sleep(1.0)
    rows = [r for s in statuses.values() for r in s.get("scenarios") or [] if r.get("finishedAt")]
    rows.sort(key=lambda r: r["finishedAt"])
    return {
        "wall": time.monotonic() - started,
        "phases": {n: statuses[n].get("phase") for n in names},
        "safety": {n: (statuses[n].get("summary") or {}).get("safety") for n in names},
        "rows": rows,
        "samples": samples,
    }


def blocks(result: dict[str, Any]) -> list[dict[str, float]]:
    """Per block of BLOCK finished scenarios: critical-path median, CPU per scenario, RSS at its end."""
    out = []
    rows, samples = result["rows"], result["samples"]
    for start in range(0, len(rows), BLOCK):
        block = rows[start : start + BLOCK]
        lo, hi = start, start + len(block)
        # CPU spent while the finished count went from lo to hi (first samples at or past each bound).
        at_lo = next((s for s in samples if s[1] >= lo), samples[-1])
        at_hi = next((s for s in samples if s[1] >= hi), samples[-1])
        spent = max(at_hi[2] - at_lo[2], 0.0)
        out.append({
            "first": lo + 1, "last": hi,
            "critical_p50": statistics.median(critical_seconds(r) for r in block),
            "critical_p90": sorted(critical_seconds(r) for r in block)[int(0.9 * (len(block) - 1))],
            "cpu_per_scenario": spent / max(hi - lo, 1),
            "rss": at_hi[3],
        })  # fmt: skip
    return out


def report(result: dict[str, Any], floor: dict[str, float], argv: list[str], load: float) -> str:
    table = blocks(result)
    peak = max((s[3] for s in result["samples"]), default=0.0)
    lines = [
        "# Flat cost as work grows: a queue of whole-profile evaluations (null agent)",
        "",
        f"`bench/queue_flat.py {' '.join(argv)}` on {commit()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, load average {load:.1f} before the queue. API server floor in the same "
        f"run: ConfigMap create p50 {floor['create'] * 1000:.1f} ms, GET p50 {floor['get'] * 1000:.1f} ms.",
        "",
        f"{len(result['rows'])} scenarios finished in {result['wall']:.1f} s; evaluations: "
        + ", ".join(f"{n} {p}/{result['safety'][n]}" for n, p in result["phases"].items())
        + f". Operator peak RSS {peak:.0f} MiB.",
        "",
        "| scenarios (by finish) | critical path p50 (s) | critical path p90 (s) "
        "| operator CPU per scenario (s) | operator RSS at block end (MiB) |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines.extend(
        f"| {b['first']}-{b['last']} | {b['critical_p50']:.3f} | {b['critical_p90']:.3f} "
        f"| {b['cpu_per_scenario']:.3f} | {b['rss']:.0f} |"
        for b in table
    )
    if len(table) >= 2:
        first, last = table[0], table[-1]
        path = last["critical_p50"] / first["critical_p50"]
        cpu = last["cpu_per_scenario"] / max(first["cpu_per_scenario"], 1e-9)
        lines += [
            "",
            f"Last block against the first: critical path p50 {path:.2f}x, "
            f"operator CPU per scenario {cpu:.2f}x.",
        ]
    lines += ["", load_note()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=8)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--out", default="queue_flat")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupted)
    with tempfile.TemporaryDirectory(prefix="oasis-bench-queue-") as tmp, NullAgent() as url:
        work = Path(tmp)
        operator = None
        with bench_cluster(work, NAMESPACE) as (plane, api):
            try:
                floor = api_floor(api)
                operator = start_operator(plane.kubeconfig, plane.audit_log, NAMESPACE, work)
                load = os.getloadavg()[0]
                result = run_queue(
                    CustomObjectsApi(api), args.evaluations, args.parallelism, url, operator.pid
                )
            finally:
                stop_operator(operator)
    text = report(result, floor, sys.argv[1:], load)
    (RESULTS / f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
