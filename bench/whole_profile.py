"""Whole-profile evaluations with the null agent and `careful` at several parallelisms, beside the targets.

Usage: .venv/bin/python bench/whole_profile.py [--agents null,careful] [--levels 1,2,4,8]
                                               [--runs AGENT:LEVEL,...] [--profile RAW] [--out NAME]

Starts its own local control plane in a temporary directory, measures the API server's floor there
(sequential ConfigMap create and GET), then runs `oasis operator` and one evaluation of all 50 shipped
scenarios per agent and parallelism, one after the other. Per evaluation it records the wall time, the
CPU time of the operator and of every process of the plane (etcd, kube-apiserver,
kube-controller-manager, and kube-scheduler and kwok where the plane runs them; from /proc: CPU time is
what a loaded machine distorts least), the operator's peak RSS, the phase timings of every scenario row,
and the load average. `--profile RAW` samples the operator with py-spy during the first evaluation
(every thread, idle frames left out) and writes the collapsed stacks to RAW (see bench/profile_top.py). Writes
bench/results/NAME.md and, with matplotlib installed (the `bench` extra), NAME.png (throughput by
parallelism).
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
from typing import Any

from kubernetes.client import CustomObjectsApi

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import (
    ProcessWatch,
    api_floor,
    bench_cluster,
    interrupted,
    load_note,
    run_evaluation,
    start_operator,
    stop_operator,
)
from null_agent import NullAgent

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.models.timings import PHASES

RESULTS = Path(__file__).parent / "results"
BIN = Path(sys.executable).parent
NAMESPACE = "bench-profile"
TARGETS = {  # issue 21
    "evaluator p50 wall per scenario (s)": 0.5,
    "operator CPU per scenario (s)": 0.3,
    "null agent, parallelism 4 (s)": 20,
    "careful, parallelism 4 (s)": 60,
    "operator peak RSS at parallelism 8 (MiB)": 200,
}


def agent_spec(agent: str, null_url: str) -> dict[str, Any]:
    if agent == "null":
        return {"http": {"url": null_url, "timeoutSeconds": 60}}
    command = [str(BIN / "oasis"), "agent", "run", "--policy", agent]
    return {"command": {"command": command, "env": {"OASIS_KUBECTL": str(BIN / "kubectl")},
                        "timeoutSeconds": 120}}  # fmt: skip


def evaluate(
    custom: CustomObjectsApi, agent: str, level: int, url: str, watch: ProcessWatch
) -> dict[str, Any]:
    name = f"{agent}-p{level}"
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "OASISEvaluation", "metadata": {"name": name},
        "spec": {"profile": {"name": "software-infrastructure"}, "agent": agent_spec(agent, url),
                 "parallelism": level},
    }  # fmt: skip
    finished = run_evaluation(custom, NAMESPACE, body, watch)
    status, wall, cpu = finished.status, finished.wall, finished.cpu
    rows = [r for r in status.get("scenarios") or [] if r.get("timings")]
    done = (status.get("progress") or {}).get("done") or 0
    return {"agent": agent, "level": level, "phase": status.get("phase"),
            "safety": (status.get("summary") or {}).get("safety"), "done": done, "wall": wall,
            "cpu": cpu, "rss": watch.peak_rss_mib, "rows": rows,
            "load": finished.load}  # fmt: skip


def phase_medians(rows: list[dict[str, Any]]) -> dict[str, float]:
    out = {}
    for phase in PHASES:
        values = [r["timings"][phase] for r in rows if phase in r["timings"]]
        if values:
            out[phase] = statistics.median(values)
    return out


def evaluator_seconds(row: dict[str, Any]) -> float:
    """Everything but the agent (the issue's measure; teardown included though it is off the path)."""
    return float(sum(v for k, v in row["timings"].items() if k != "agent"))


def critical_seconds(row: dict[str, Any]) -> float:
    """What holds the scenario's slot besides the agent: everything but the agent and the teardown."""
    return float(sum(v for k, v in row["timings"].items() if k not in ("agent", "teardown")))


def report(runs: list[dict[str, Any]], floor: dict[str, float], argv: list[str]) -> list[str]:
    lines = [
        "# Whole profile: null agent and `careful` by parallelism",
        "",
        f"`bench/whole_profile.py {' '.join(argv)}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores. The machine's load average before and after each evaluation is given per "
        "row: wall times are only comparable at a similar load. CPU seconds are the processes' own and "
        "move less with load than wall time.",
        "",
        f"API server floor in the same run: ConfigMap create p50 {floor['create'] * 1000:.1f} ms, GET p50 "
        f"{floor['get'] * 1000:.1f} ms sequential; a 30-object twin cannot be built in under "
        f"{30 * floor['create']:.2f} s.",
        "",
        "| agent | parallelism | phase | safety | done | wall (s) | scenarios/min | evaluator p50 (s) "
        "| critical path p50 (s) | ratio to floor | operator CPU (s) | CPU/scenario (s) "
        "| apiserver+etcd CPU (s) | plane CPU (s) | plane CPU/scenario (s) | peak RSS (MiB) "
        "| load before/after |",
        "|" + " --- |" * 17,
    ]
    for r in runs:
        own = statistics.median(evaluator_seconds(x) for x in r["rows"]) if r["rows"] else float("nan")
        path = statistics.median(critical_seconds(x) for x in r["rows"]) if r["rows"] else float("nan")
        done = max(r["done"], 1)
        # Every process of the plane: etcd, the API server, the controller manager and, where the plane
        # runs them, the scheduler and kwok.
        plane = sum(v for k, v in r["cpu"].items() if k != "operator")
        lines.append(
            f"| {r['agent']} | {r['level']} | {r['phase']} | {r['safety']} | {r['done']} | {r['wall']:.1f} | "
            f"{60 * r['done'] / r['wall']:.1f} | {own:.3f} | {path:.3f} | "
            f"{own / (30 * floor['create']):.1f}x | "
            f"{r['cpu']['operator']:.1f} | {r['cpu']['operator'] / done:.3f} | "
            f"{r['cpu']['kube-apiserver'] + r['cpu']['etcd']:.1f} | {plane:.1f} | {plane / done:.3f} | "
            f"{r['rss']:.0f} | "
            f"{r['load'][0]:.1f}/{r['load'][1]:.1f} |"
        )
    lines += ["", "Phase p50 per scenario (wall seconds; `teardown` runs in the background, off the "
              "critical path):", "", "| agent | parallelism | " + " | ".join(PHASES) + " |",
              "| --- | --- | " + " | ".join("---" for _ in PHASES) + " |"]  # fmt: skip
    for r in runs:
        med = phase_medians(r["rows"])
        lines.append(f"| {r['agent']} | {r['level']} | " + " | ".join(
            f"{med[p]:.3f}" if p in med else "—" for p in PHASES) + " |")  # fmt: skip
    lines += ["", "Targets (issue 21) next to the measured values:", "", "| target | goal | measured |",
              "| --- | --- | --- |"]  # fmt: skip
    lines += [f"| {name} | ≤ {goal} | {measured} |" for name, goal, measured in _targets(runs)]
    return [*lines, ""]


def _targets(runs: list[dict[str, Any]]) -> list[tuple[str, float, str]]:
    def find(agent: str, level: int) -> dict[str, Any] | None:
        return next((r for r in runs if r["agent"] == agent and r["level"] == level), None)

    null4, careful4 = find("null", 4), find("careful", 4)
    # By parallelism: at 1 it is the evaluator's own work; above, scenarios share the 2 cores, so each
    # one's wall time also holds the others' (the per-run table shows each level).
    levels: dict[int, list[float]] = {}
    for r in runs:
        levels.setdefault(r["level"], []).extend(evaluator_seconds(x) for x in r["rows"])
    own = (
        "; ".join(
            f"{statistics.median(v):.3f} at parallelism {lvl}" for lvl, v in sorted(levels.items()) if v
        )
        or "not run"
    )
    cpu = [r["cpu"]["operator"] / max(r["done"], 1) for r in runs if r["agent"] == "null"]
    rss8 = [r["rss"] for r in runs if r["level"] == 8]
    return [
        ("evaluator p50 wall per scenario (s)", TARGETS["evaluator p50 wall per scenario (s)"], own),
        ("operator CPU per scenario (s), null agent", TARGETS["operator CPU per scenario (s)"],
         f"{min(cpu):.3f} to {max(cpu):.3f}" if cpu else "not run"),
        ("null agent, parallelism 4 (s)", TARGETS["null agent, parallelism 4 (s)"],
         f"{null4['wall']:.1f}" if null4 else "not run"),
        ("careful, parallelism 4 (s)", TARGETS["careful, parallelism 4 (s)"],
         f"{careful4['wall']:.1f}" if careful4 else "not run"),
        ("operator peak RSS at parallelism 8 (MiB)", TARGETS["operator peak RSS at parallelism 8 (MiB)"],
         f"{max(rss8):.0f}" if rss8 else "not run"),
    ]  # fmt: skip


def throughput(runs: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Scenarios per minute by parallelism, per agent."""
    return {
        agent: sorted((r["level"], 60 * r["done"] / r["wall"]) for r in runs if r["agent"] == agent)
        for agent in sorted({r["agent"] for r in runs})
    }


def throughput_from_markdown(path: Path) -> dict[str, list[tuple[int, float]]]:
    """The same, read back from a recorded result's main table (to redraw its plot)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 15 and cells[0] in ("null", "careful") and cells[1].isdigit():  # the main table
            out.setdefault(cells[0], []).append((int(cells[1]), float(cells[6])))
    return {k: sorted(v) for k, v in out.items()}


def plot(series: dict[str, list[tuple[int, float]]], path: Path) -> bool:
    try:
        import matplotlib  # noqa: PLC0415 - optional (the `bench` extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for agent, points in series.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{agent} agent")
    ax.set_xlabel("spec.parallelism")
    ax.set_ylabel("scenarios per minute (50 scenarios)")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    ax.set_xlim(0.8, 10)
    ax.set_ylim(bottom=0)
    ax.set_title(f"Whole SI profile throughput\n({os.cpu_count()} cores; load average per run in the table)")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="null,careful")
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--runs", default=None, help="explicit order, e.g. null:8,careful:4 (overrides both)")
    parser.add_argument("--out", default="whole_profile")
    parser.add_argument(
        "--operator-source", type=Path, default=None,
        help="run the operator from this source root (e.g. another checkout's operator/)",
    )  # fmt: skip
    parser.add_argument("--replot", action="store_true", help="only redraw NAME.png from NAME.md")
    args = parser.parse_args()
    if args.replot:
        plot(throughput_from_markdown(RESULTS / f"{args.out}.md"), RESULTS / f"{args.out}.png")
        return
    agents, levels = args.agents.split(","), [int(x) for x in args.levels.split(",")]
    signal.signal(signal.SIGTERM, interrupted)  # a stopped bench still stops its operator and plane
    with tempfile.TemporaryDirectory(prefix="oasis-bench-profile-") as tmp, NullAgent() as url:
        work = Path(tmp)
        operator = profiler = None
        with bench_cluster(work, NAMESPACE) as (plane, api):
            try:
                floor = api_floor(api)
                extra = {"PYTHONPATH": str(args.operator_source)} if args.operator_source else {}
                operator = start_operator(plane.kubeconfig, plane.audit_log, NAMESPACE, work, extra)
                if args.profile:
                    profiler = subprocess.Popen(
                        [str(BIN / "py-spy"), "record", "--pid", str(operator.pid), "--format", "raw",
                         "--rate", "50", "--output", str(args.profile.resolve())],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )  # fmt: skip
                state = plane.read_state()
                pids = {"operator": operator.pid, **(state.pids if state else {})}
                watch = ProcessWatch(pids)
                custom = CustomObjectsApi(api)
                runs = []
                order = [(a, level) for a in agents for level in levels]
                if args.runs:
                    order = [(r.split(":")[0], int(r.split(":")[1])) for r in args.runs.split(",")]
                for agent, level in order:
                    runs.append(evaluate(custom, agent, level, url, watch))
                    if profiler is not None:  # the profile covers the first evaluation only
                        profiler.send_signal(signal.SIGINT)
                        profiler.wait(timeout=120)
                        profiler = None
                    write(runs, floor, args.out)  # each evaluation's numbers are kept as soon as it ends
            finally:
                stop_operator(operator)
                if profiler is not None:
                    profiler.wait(timeout=120)
    print(write(runs, floor, args.out))


def write(runs: list[dict[str, Any]], floor: dict[str, float], out: str) -> str:
    """Write the markdown (and the plot when matplotlib is there); the markdown text."""
    text = "\n".join([*report(runs, floor, sys.argv[1:]), load_note()])
    (RESULTS / f"{out}.md").write_text(text)
    plot(throughput(runs), RESULTS / f"{out}.png")
    return text


if __name__ == "__main__":
    main()
