"""Provisioning with twin objects sent one at a time (before) and in waves (after), interleaved.

Usage: .venv/bin/python bench/provision_ab.py [ROUNDS] [AT_ONCE]   (defaults: 1 and 4)

Starts a local control plane in a temporary directory and provisions every shipped scenario with two
providers in turn, scenario by scenario (sequential first, then waves of up to AT_ONCE), so whatever
else loads the machine loads both alike. Each sandbox is removed (not awaited) after it is measured.
Reports provision wall time and this thread's CPU time per scenario, with the load average.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider

OUT = Path(__file__).parent / "results" / "provision_ab.md"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    at_once = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    scenarios = load_profile(default_profile_path()).scenarios
    walls: dict[str, list[float]] = {"sequential": [], "waves": []}
    cpus: dict[str, list[float]] = {"sequential": [], "waves": []}
    with tempfile.TemporaryDirectory(prefix="oasis-bench-ab-") as tmp:
        plane = LocalControlPlane(run_dir=Path(tmp) / "cluster")
        plane.start()
        try:
            api = api_client(plane.kubeconfig)
            providers = {
                "sequential": SandboxProvider(api, prefix="ab1", create_at_once=1),
                "waves": SandboxProvider(api, prefix="ab2", create_at_once=at_once),
            }
            load_before = os.getloadavg()
            for _ in range(rounds):
                for scenario in scenarios:
                    for name, provider in providers.items():
                        t0, c0 = time.perf_counter(), time.process_time()
                        record = provider.provision(scenario)
                        walls[name].append(time.perf_counter() - t0)
                        cpus[name].append(time.process_time() - c0)
                        provider.teardown(record.environment.id, wait=False)
            load_after = os.getloadavg()
        finally:
            plane.stop()
    lines = [
        "# Provisioning: twin objects one at a time vs in waves",
        "",
        f"`bench/provision_ab.py {rounds} {at_once}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, **heavily loaded machine** (load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after; absolute times are inflated by it, the two columns alike since they "
        "alternate scenario by scenario). CPU is this process's (every thread).",
        "",
        "| creation | scenarios | wall p50 (s) | wall mean (s) | wall p95 (s) | CPU mean (s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, values in walls.items():
        w, c = sorted(values), cpus[name]
        lines.append(
            f"| {name} | {len(w)} | {statistics.median(w):.3f} | {statistics.mean(w):.3f} | "
            f"{w[round(0.95 * (len(w) - 1))]:.3f} | {statistics.mean(c):.3f} |"
        )
    lines.append("")
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
