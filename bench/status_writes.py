"""How many OASISEvaluation status writes a whole-profile run makes, what they cost, and what kopf gets.

Usage: .venv/bin/python bench/status_writes.py [--level 4] [--source LABEL=DIR ...] [--out NAME]

For each `--source` (a label and an operator source root, e.g. `before=/tmp/before/operator`; default:
this checkout as `this`), one after the other and each on a fresh local control plane: `oasis operator`
from that source and one null-agent evaluation of the whole shipped profile at `--level`. From the
plane's audit log it counts the writes of the evaluation object: the status PATCHes (with the bytes of
their request and response bodies) and every write of it in all, which is how many watch events kopf
delivers to the operator. Beside them the CPU seconds of the operator, kube-apiserver and etcd, the
wall time and the load. The rows of the final status are compared between sources scenario by scenario
(result, score, message, evidence): a faster status must say the same. Writes bench/results/NAME.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes.client import CustomObjectsApi

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import ProcessWatch, bench_cluster, interrupted, load_note, start_operator, stop_operator
from null_agent import NullAgent
from whole_profile import NAMESPACE, evaluate

RESULTS = Path(__file__).parent / "results"
COMPARED = ("result", "score", "message", "evidence", "unevaluable")


def census(audit_log: Path) -> dict[str, Any]:
    """Writes of OASISEvaluation objects in the audit log: status PATCHes and their bytes, all writes."""
    counts: Counter[str] = Counter()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if event.get("stage") != "ResponseComplete" or ref.get("resource") != "oasisevaluations":
            continue
        if event.get("verb") not in ("create", "update", "patch"):
            continue
        counts["writes"] += 1
        if ref.get("subresource") == "status" and event["verb"] == "patch":
            counts["status patches"] += 1
            counts["request bytes"] += len(json.dumps(event.get("requestObject") or {}))
            counts["response bytes"] += len(json.dumps(event.get("responseObject") or {}))
            counts["audit bytes"] += len(line)
    return dict(counts)


def one_run(label: str, source: Path | None, level: int, url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="oasis-bench-status-") as tmp:
        work = Path(tmp)
        with bench_cluster(work, NAMESPACE) as (plane, api):
            extra = {"PYTHONPATH": str(source)} if source else {}
            operator = start_operator(plane.kubeconfig, plane.audit_log, NAMESPACE, work, extra)
            try:
                time.sleep(3)  # the operator's start-up, outside the measured run
                state = plane.read_state()
                watch = ProcessWatch({"operator": operator.pid, **(state.pids if state else {})})
                custom = CustomObjectsApi(api)
                run = evaluate(custom, "null", level, url, watch)
                time.sleep(1)  # the evaluation's deletion is not counted; let the log catch up on the rest
            finally:
                stop_operator(operator)
            run["census"] = census(plane.audit_log)
    run["label"] = label
    return run


def rows_differ(runs: list[dict[str, Any]]) -> list[str]:
    """Scenario ids whose compared row fields differ from the first run's."""

    def key(run: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        return {r["id"]: tuple(r.get(f) for f in COMPARED) for r in run["rows"]}

    first = key(runs[0])
    return sorted({sid for run in runs[1:] for sid, value in key(run).items() if first.get(sid) != value})


def report(runs: list[dict[str, Any]], level: int, argv: list[str]) -> str:
    lines = [
        "# Status writes of a whole-profile run (null agent)",
        "",
        f"`bench/status_writes.py {' '.join(argv)}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, parallelism {level}, each run on a fresh local plane. Counts are from the "
        "plane's audit log; every write of the object is one watch event kopf hands the operator. CPU "
        "seconds are the processes' own over the evaluation; wall time moves with the load beside it.",
        "",
        "| source | phase | done | wall (s) | status PATCHes | all writes (kopf events) | PATCH request kB "
        "| PATCH response kB | audit kB of PATCHes | operator CPU (s) | kube-apiserver CPU (s) "
        "| etcd CPU (s) | load before/after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        c, cpu = r["census"], r["cpu"]
        lines.append(
            f"| {r['label']} | {r['phase']} | {r['done']} | {r['wall']:.1f} | {c.get('status patches', 0)} | "
            f"{c.get('writes', 0)} | {c.get('request bytes', 0) / 1000:.0f} | "
            f"{c.get('response bytes', 0) / 1000:.0f} | {c.get('audit bytes', 0) / 1000:.0f} | "
            f"{cpu['operator']:.1f} | {cpu['kube-apiserver']:.1f} | {cpu['etcd']:.1f} | "
            f"{r['load'][0]:.1f}/{r['load'][1]:.1f} |"
        )
    differ = rows_differ(runs)
    same = "the same in every run" if not differ else f"different for {', '.join(differ)}"
    lines += ["", f"Final rows ({', '.join(COMPARED)}), scenario by scenario: {same}.", "", load_note(), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=4)
    parser.add_argument("--source", action="append", default=[], help="LABEL=DIR (an operator/ source)")
    parser.add_argument("--out", default="status_writes")
    args = parser.parse_args()
    sources: list[tuple[str, Path | None]] = [
        (s.split("=", 1)[0], Path(s.split("=", 1)[1])) for s in args.source
    ] or [("this", None)]
    signal.signal(signal.SIGTERM, interrupted)  # a stopped bench still stops its operator and plane
    runs = []
    with NullAgent() as url:
        for label, source in sources:
            runs.append(one_run(label, source, args.level, url))
            text = report(runs, args.level, sys.argv[1:])
            (RESULTS / f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
