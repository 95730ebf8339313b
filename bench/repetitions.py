"""What repetitions cost: the same scenarios at spec.repetitions 1 and 5, null agent, same parallelism.

Usage: .venv/bin/python bench/repetitions.py [--ids GLOB,...] [--parallelism 2] [--k 5] [--rounds 1]
                                             [--out repetitions]

Starts its own local control plane in a temporary directory and `oasis operator`, then runs one
evaluation of the chosen scenarios (default: eight safety scenarios of different categories) at k = 1
and one at k, alternately for `--rounds` rounds, at the same parallelism. Per evaluation it records
the wall time from creation to a terminal phase, the runs done, the operator's CPU seconds and the load
average before and after. The target (issue 30) is linear cost: k runs take at most 1.1 k times one
run's wall time (k = 5: at most 5.5x). Writes bench/results/NAME.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes.client import CustomObjectsApi

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import (
    ProcessWatch,
    bench_cluster,
    interrupted,
    load_note,
    run_evaluation,
    start_operator,
    stop_operator,
)
from null_agent import NullAgent

from oasis_operator import API_GROUP, API_VERSION

RESULTS = Path(__file__).parent / "results"
NAMESPACE = "bench-repetitions"
EIGHT = [
    "infra.safety.be.*",
    "infra.safety.do.*",
    "infra.safety.de.direct-secret-request-001",
    "infra.safety.sc.drift*",
]
SLACK = 1.1  # issue 30: k = 5 at most 5.5x the wall time of k = 1


def evaluate(
    custom: CustomObjectsApi, name: str, spec: dict[str, Any], watch: ProcessWatch
) -> dict[str, Any]:
    """One evaluation from creation to a terminal phase: wall, runs, operator CPU, load before/after."""
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": name},
        "spec": spec,
    }
    finished = run_evaluation(custom, NAMESPACE, body, watch)
    status = finished.status
    progress = status.get("progress") or {}
    return {
        "name": name,
        "k": spec.get("repetitions", 1),
        "phase": status.get("phase"),
        "safety": (status.get("summary") or {}).get("safety"),
        "scenarios": len(status.get("scenarios") or []),
        "runs": f"{progress.get('done', 0)}/{progress.get('total', 0)}",
        "wall": finished.wall,
        "cpu": finished.cpu["operator"],
        "load": finished.load,
    }


def report(results: list[dict[str, Any]], k: int, parallelism: int, ids: list[str]) -> list[str]:
    ones = [r["wall"] for r in results if r["k"] == 1]
    many = [r["wall"] for r in results if r["k"] == k]
    lines = [
        f"# Repetitions: k = {k} against k = 1, null agent, parallelism {parallelism}",
        "",
        f"`bench/repetitions.py {' '.join(sys.argv[1:])}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores; scenarios {', '.join(f'`{i}`' for i in ids)}. Wall times are only "
        "comparable at a similar load: the load average before and after each evaluation is on its row.",
        "",
        "| evaluation | k | phase | safety | scenarios | runs done/total | wall (s) | operator CPU (s) "
        "| load before/after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['name']} | {r['k']} | {r['phase']} | {r['safety']} | {r['scenarios']} | {r['runs']} | "
        f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['load'][0]:.2f}/{r['load'][1]:.2f} |"
        for r in results
    ]
    if ones and many:
        ratio = statistics.median(many) / statistics.median(ones)
        verdict = "met" if ratio <= SLACK * k else "NOT met"
        lines += [
            "",
            f"Median wall: k = 1 {statistics.median(ones):.1f} s, k = {k} {statistics.median(many):.1f} s; "
            f"ratio {ratio:.2f} (target ≤ {SLACK * k:g}: {verdict}).",
        ]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", default=",".join(EIGHT))
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", default="repetitions")
    args = parser.parse_args()
    ids = args.ids.split(",")
    signal.signal(signal.SIGTERM, interrupted)  # a stopped bench still stops its operator and plane
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="oasis-bench-repetitions-") as tmp, NullAgent() as url:
        work = Path(tmp)
        operator = None
        with bench_cluster(work, NAMESPACE) as (plane, api):
            try:
                operator = start_operator(plane.kubeconfig, plane.audit_log, NAMESPACE, work)
                state = plane.read_state()
                watch = ProcessWatch({"operator": operator.pid, **(state.pids if state else {})})
                custom = CustomObjectsApi(api)
                for round_ in range(1, args.rounds + 1):
                    for k in (1, args.k):
                        spec = {
                            "profile": {"name": "software-infrastructure"},
                            "agent": {"http": {"url": url, "timeoutSeconds": 60}},
                            "scenarios": {"ids": ids},
                            "parallelism": args.parallelism,
                            "repetitions": k,
                        }
                        results.append(evaluate(custom, f"k{k}-r{round_}", spec, watch))
                        write(results, args, ids)
            finally:
                stop_operator(operator)
    print(write(results, args, ids))


def write(results: list[dict[str, Any]], args: argparse.Namespace, ids: list[str]) -> str:
    """Write the markdown; its text."""
    text = "\n".join([*report(results, args.k, args.parallelism, ids), load_note()])
    (RESULTS / f"{args.out}.md").write_text(text + "\n")
    return text


if __name__ == "__main__":
    main()
