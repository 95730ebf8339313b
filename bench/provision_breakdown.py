"""Where provisioning's time and requests go, step by step, per scenario.

Usage: .venv/bin/python bench/provision_breakdown.py [ROUNDS] [--label NAME] [--out FILE]

Starts a local control plane in a temporary directory and provisions every shipped scenario ROUNDS times
(default 1), one at a time, removing each sandbox (not awaited) after it is measured. Every API request
the provisioning makes is timed on the client side and sorted into a step by its shape: namespaces,
the default ServiceAccount (wait or create), the agent's RBAC, the twin's objects and status writes, the
before-snapshot's reads and the stored record; then the teardown's wall time and requests. A step's
time is the span from its first request's start to its last one's end (steps run one after the other).
Also the CPU seconds of kube-apiserver and etcd and of this process over all provisions (what a loaded
machine distorts least), and the load average.
Prints one markdown table, and appends it to FILE with `--out`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import ProcessWatch, load_note, percentile

import oasis_operator
from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider

STEPS = ("namespaces", "serviceaccount", "rbac", "twin", "snapshot", "record", "other")
RBAC = ("/serviceaccounts", "/roles", "/rolebindings", "/clusterroles", "/clusterrolebindings")


def step_of(method: str, path: str, body: Any) -> str:
    """Which provisioning step a request belongs to, from its method, path and body."""
    tail = path.split("?", maxsplit=1)[0]
    if method == "POST" and tail.endswith("/namespaces"):
        return "namespaces"
    if tail.endswith("/serviceaccounts/default") or (
        method == "POST" and tail.endswith("/serviceaccounts") and _name(body) == "default"
    ):
        return "serviceaccount"
    if method == "POST" and tail.endswith(RBAC):
        return "rbac"
    if method == "POST" and tail.endswith("/configmaps") and (_name(body) or "").startswith("environment"):
        return "record"
    if method in ("POST", "PATCH", "PUT"):
        return "twin"
    if method == "GET":
        return "snapshot"
    return "other"


def _span(times: list[tuple[float, float]]) -> float:
    return max(e for _, e in times) - min(s for s, _ in times) if times else 0.0


def _name(body: Any) -> str | None:
    return body.get("metadata", {}).get("name") if isinstance(body, dict) else None


class Tape:
    """Every request of the current provision: (step, start, end), from any thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()

    def wrap(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def timed(api: Any, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return real(api, method, path, body, **kwargs)
            finally:
                with self.lock:
                    self.calls.append((step_of(method, path, body), t0, time.perf_counter()))

        return timed


def _record_requests(tape: Tape) -> None:
    """Route the request helper of every sandbox module through the tape."""
    for name, module in list(sys.modules.items()):
        if name.startswith("oasis_operator.sandbox") and callable(getattr(module, "request", None)):
            module.request = tape.wrap(module.request)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="?", type=int, default=1)
    parser.add_argument("--label", default="")
    parser.add_argument("--out")
    args = parser.parse_args()
    scenarios = load_profile(default_profile_path()).scenarios
    tape = Tape()
    _record_requests(tape)
    spans: dict[str, list[float]] = defaultdict(list)
    counts: Counter[str] = Counter()
    walls: list[float] = []
    teardowns: list[float] = []  # removal until its last request is answered (not until gone)
    teardown_requests = 0
    with tempfile.TemporaryDirectory(prefix="oasis-bench-breakdown-") as tmp:
        plane = LocalControlPlane(run_dir=Path(tmp) / "cluster")
        plane.start()
        try:
            api = api_client(plane.kubeconfig)
            provider = SandboxProvider(api, prefix="pb")
            state = plane.read_state()
            watch = ProcessWatch({"bench": os.getpid(), **(state.pids if state else {})})
            time.sleep(5)  # start-up traffic settles
            load_before = os.getloadavg()
            watch.begin()
            for _ in range(args.rounds):
                for scenario in scenarios:
                    tape.calls.clear()
                    t0 = time.perf_counter()
                    record = provider.provision(scenario)
                    walls.append(time.perf_counter() - t0)
                    by_step: dict[str, list[tuple[float, float]]] = defaultdict(list)
                    for step, start, end in tape.calls:
                        by_step[step].append((start, end))
                        counts[step] += 1
                    for step in STEPS:
                        times = by_step.get(step)
                        spans[step].append(
                            max(e for _, e in times) - min(s for s, _ in times) if times else 0.0
                        )
                    tape.calls.clear()
                    t0 = time.perf_counter()
                    provider.teardown(record.environment.id, wait=False)
                    teardowns.append(time.perf_counter() - t0)
                    teardown_requests += len(tape.calls)
            cpu = watch.end()
            load_after = os.getloadavg()
        finally:
            plane.stop()
    lines = render(args, walls, (teardowns, teardown_requests), counts, spans, cpu, (load_before, load_after))
    lines += ["", load_note(), ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with Path(args.out).open("a") as out:
            out.write(text + "\n")


def render(
    args: argparse.Namespace,
    walls: list[float],
    teardown: tuple[list[float], int],
    counts: Counter[str],
    spans: dict[str, list[float]],
    cpu: dict[str, float],
    loads: tuple[tuple[float, float, float], tuple[float, float, float]],
) -> list[str]:
    """The result's lines (without the load note)."""
    removals, removal_requests = teardown
    n = len(walls)
    apiserver = sum(v for k, v in cpu.items() if k != "bench")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    package = Path(oasis_operator.__file__).parent
    lines = [
        f"### {args.label or 'provision'}: {n} provisions, {when}",
        "",
        f"`bench/provision_breakdown.py {args.rounds}` (package at `{package}`), {os.cpu_count()} cores, "
        f"load average {loads[0][0]:.1f} before, {loads[1][0]:.1f} after.",
        "",
        f"Provision wall p50 {statistics.median(walls):.3f} s, mean {statistics.mean(walls):.3f} s, "
        f"p95 {percentile(walls, 0.95):.3f} s. Requests per scenario: {sum(counts.values()) / n:.1f}. "
        f"CPU per scenario: kube-apiserver + etcd {apiserver / n:.3f} s, "
        f"this process {cpu['bench'] / n:.3f} s.",
        "",
        f"Teardown (until its requests are answered, not until gone; its CPU is in the figures above) "
        f"p50 {statistics.median(removals):.3f} s, mean {statistics.mean(removals):.3f} s, "
        f"{removal_requests / n:.1f} requests per scenario.",
        "",
        "| step | requests per scenario | span p50 (s) | span mean (s) |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| {step} | {counts[step] / n:.1f} | {statistics.median(spans[step]):.3f} | "
        f"{statistics.mean(spans[step]):.3f} |"
        for step in STEPS
        if counts[step] or any(spans[step])
    ]
    return lines


if __name__ == "__main__":
    main()
