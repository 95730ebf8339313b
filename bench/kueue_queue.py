"""A fleet through a Kueue quota: many queued null-agent evaluations, a quota of N slots, an operator
restart in the middle.

Usage: .venv/bin/python bench/kueue_queue.py [--evaluations 100] [--slots 4] [--scenarios 2]
       [--restart-at 0.5] [--out bench/results/kueue_queue.md]

Starts its own local control plane in a temporary directory, Kueue's manager beside it (built by
hack/build-kueue.sh), a ClusterQueue with quota for `--slots` scenario slots (the operator's default slot:
1 CPU, 1 Gi) and its LocalQueue, the null agent, and one `oasis operator` whose own limit is far above the
quota (`OASIS_MAX_EVALUATIONS` = the number of evaluations), so that Kueue alone decides how many run.
Then it creates every evaluation at once (parallelism 1: one slot each; `--scenarios` safety scenarios
each), queue-labelled, and samples every second how many Workloads hold quota and how many evaluations
are running (a phase between Preflight and Capability). When `--restart-at` of them have finished, it
stops the operator (SIGTERM) and starts a new one.

It records: the most evaluations ever running and Workloads ever admitted at once (the bound: `--slots`);
how many finished and with which verdicts (nothing lost: every one terminal, none run twice); and the
queue's overhead per evaluation: from its Workload's admission (QuotaReserved) to its run starting, and
from its verdict to its Workload's Finished condition. Writes the markdown to `--out`.
"""

from __future__ import annotations

import argparse
import datetime
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
    bench_cluster,
    interrupted,
    load_note,
    percentile,
    start_operator,
    stop_operator,
)
from null_agent import NullAgent

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.kueue_workload import workload_name
from oasis_operator.localcluster.kueue import missing_kueue, start_kueue
from oasis_operator.models.crd import EvaluationRef

NAMESPACE = "bench-kueue"
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE = "bench"
RUNNING = {"Preflight", "Safety", "Capability"}
SCENARIOS = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.de.direct-secret-request-001",
    "infra.safety.be.cross-namespace-read-001",
]


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "an unknown commit"


def make_queue(custom: CustomObjectsApi, slots: int) -> None:
    """A ResourceFlavor, a ClusterQueue with quota for `slots` slots, and its LocalQueue."""
    custom.create_cluster_custom_object(
        GROUP, VERSION, "resourceflavors",
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": QUEUE}},
    )  # fmt: skip
    resources = [
        {"name": "cpu", "nominalQuota": str(slots)},
        {"name": "memory", "nominalQuota": f"{slots}Gi"},
    ]
    custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue", "metadata": {"name": QUEUE},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                 "flavors": [{"name": QUEUE, "resources": resources}]}]},
    })  # fmt: skip
    custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "localqueues", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue", "metadata": {"name": QUEUE},
        "spec": {"clusterQueue": QUEUE},
    })  # fmt: skip


def _when(obj: dict[str, Any], kind: str) -> datetime.datetime | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return datetime.datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))
    return None


def _ts(text: str | None) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def run(custom: CustomObjectsApi, args: argparse.Namespace, url: str, start: Any) -> dict[str, Any]:
    scenarios = SCENARIOS[: args.scenarios]
    names = [f"fleet-{i:03d}" for i in range(args.evaluations)]
    for name in names:
        body = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "OASISEvaluation",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
            "spec": {"profile": {"name": "software-infrastructure"}, "parallelism": 1,
                     "scenarios": {"ids": scenarios}, "agent": {"http": {"url": url, "timeoutSeconds": 60}}},
        }  # fmt: skip
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", body)
    began = time.monotonic()
    peak_running = peak_admitted = 0
    restarted_at: float | None = None
    operator = start()
    try:
        while True:
            items = cast(dict[str, Any], custom.list_namespaced_custom_object(
                API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations"))["items"]  # fmt: skip
            workloads = cast(dict[str, Any], custom.list_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, "workloads"))["items"]  # fmt: skip
            phases = {i["metadata"]["name"]: (i.get("status") or {}).get("phase") for i in items}
            running = sum(1 for p in phases.values() if p in RUNNING)
            admitted = sum(1 for w in workloads if _when(w, "QuotaReserved") and not _when(w, "Finished"))
            peak_running, peak_admitted = max(peak_running, running), max(peak_admitted, admitted)
            done = sum(1 for p in phases.values() if p in TERMINAL)
            if restarted_at is None and done >= args.restart_at * len(names):
                stop_operator(operator)
                restarted_at = time.monotonic() - began
                operator = start()
            if done == len(names) or time.monotonic() - began > args.timeout:
                break
            time.sleep(1.0)
    finally:
        stop_operator(operator)
    wall = time.monotonic() - began
    items = {i["metadata"]["name"]: i for i in cast(dict[str, Any], custom.list_namespaced_custom_object(
        API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations"))["items"]}  # fmt: skip
    to_start, to_finish, lost, verdicts = [], [], [], {}
    for name in names:
        item = items.get(name)
        status = (item or {}).get("status") or {}
        if item is None or status.get("phase") not in TERMINAL:
            lost.append(name)
            continue
        verdicts[name] = (status.get("phase"), (status.get("summary") or {}).get("safety"))
        workload = cast(dict[str, Any], custom.get_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, "workloads", workload_name(EvaluationRef.of(item))))  # fmt: skip
        admitted_at, finished_at = _when(workload, "QuotaReserved"), _when(workload, "Finished")
        started_at, ended_at = _ts(status.get("startedAt")), _ts(status.get("completedAt"))
        if admitted_at and started_at:
            to_start.append((started_at - admitted_at).total_seconds())
        if ended_at and finished_at:
            to_finish.append((finished_at - ended_at).total_seconds())
    return {"wall": wall, "peak_running": peak_running, "peak_admitted": peak_admitted, "lost": lost,
            "verdicts": verdicts, "to_start": to_start, "to_finish": to_finish, "restarted_at": restarted_at,
            "scenarios": len(scenarios)}  # fmt: skip


def report(result: dict[str, Any], args: argparse.Namespace, argv: list[str], load: str) -> str:
    counts: dict[str, int] = {}
    for phase, safety in result["verdicts"].values():
        counts[f"{phase}/{safety}"] = counts.get(f"{phase}/{safety}", 0) + 1

    def spread(values: list[float]) -> str:
        if not values:
            return "no sample"
        return (f"p50 {statistics.median(values):.1f} s, p90 {percentile(values, 0.9):.1f} s, "
                f"max {max(values):.1f} s ({len(values)} evaluations)")  # fmt: skip

    restart = result["restarted_at"]
    return "\n".join(
        [
            f"# A fleet through a Kueue quota: {args.evaluations} null-agent evaluations, quota {args.slots}",
            "",
            f"`bench/kueue_queue.py {' '.join(argv)}` on {commit()}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. {load}",
            "",
            f"- Evaluations: {args.evaluations}, {result['scenarios']} safety scenarios each, parallelism 1 "
            f"(one slot); quota {args.slots} slots; the operator's own limit {args.evaluations}.",
            f"- All {len(result['verdicts'])} of {args.evaluations} ended in {result['wall']:.0f} s: "
            + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + (f"; **not ended: {', '.join(result['lost'])}**" if result["lost"] else "; none lost")
            + ".",
            f"- Most evaluations running at once: {result['peak_running']}; most Workloads holding quota at "
            f"once: {result['peak_admitted']} (bound {args.slots}).",
            "- Operator restarted (SIGTERM, a new process) at "
            + (
                f"{restart:.0f} s, when {args.restart_at:.0%} had ended."
                if restart is not None
                else "no point."
            ),
            f"- Admission to run start (QuotaReserved → status.startedAt): {spread(result['to_start'])}.",
            f"- Verdict to Workload Finished (status.completedAt → Finished): {spread(result['to_finish'])}.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--evaluations", type=int, default=100)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--scenarios", type=int, default=2, choices=range(1, len(SCENARIOS) + 1))
    parser.add_argument("--restart-at", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    missing = missing_kueue()
    if missing:
        print(f"kueue_queue: {missing}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, interrupted)
    load = load_note()
    with tempfile.TemporaryDirectory(prefix="oasis-bench-kueue-") as tmp:
        work = Path(tmp)
        with bench_cluster(work, NAMESPACE) as (plane, api), NullAgent() as url:
            start_kueue(plane)
            custom = CustomObjectsApi(api)
            make_queue(custom, args.slots)
            env = {"OASIS_MAX_EVALUATIONS": str(args.evaluations)}

            def start() -> subprocess.Popen[bytes]:
                return start_operator(plane.kubeconfig, plane.audit_log, NAMESPACE, work, env)

            result = run(custom, args, url, start)
    text = report(result, args, sys.argv[1:], load)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    bounded = result["peak_running"] <= args.slots and result["peak_admitted"] <= args.slots
    return 0 if bounded and not result["lost"] else 1


if __name__ == "__main__":
    sys.exit(main())
