"""Provisioning and teardown time per scenario for the whole shipped profile; writes a markdown table.

Usage: .venv/bin/python bench/sandbox_provision.py [ROUNDS]
Starts its own local control plane in a temporary directory (or uses $OASIS_BENCH_KUBECONFIG).
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

OUT = Path(__file__).parent / "results" / "sandbox_provision.md"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, values: list[float]) -> str:
    return f"| {name} | {_pct(values, 0.5):.2f} | {_pct(values, 0.95):.2f} | {max(values):.2f} |"


def run(kubeconfig: Path, rounds: int) -> list[str]:
    profile = load_profile(default_profile_path())
    provider = SandboxProvider(api_client(kubeconfig), prefix="bench")
    provision, teardown = [], []
    for _ in range(rounds):
        for scenario in profile.scenarios:
            t0 = time.perf_counter()
            record = provider.provision(scenario)
            provision.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            report = provider.teardown(record.environment.id, wait=True, timeout=120)
            teardown.append(time.perf_counter() - t0)
            if not report.complete:
                raise SystemExit(f"teardown incomplete for {scenario.id}: {report.remaining}")
    return [
        "# Sandbox: provisioning and teardown per scenario",
        "",
        f"All {len(profile.scenarios)} shipped scenarios, {rounds} round(s), one at a time, on the local",
        "control plane (2 cores). Teardown is measured until every namespace and cluster-scoped object is",
        "gone.",
        "",
        "| measure | p50 (s) | p95 (s) | max (s) |",
        "| --- | --- | --- | --- |",
        _row("provision (twin, RBAC, before-snapshot)", provision),
        _row("teardown until gone", teardown),
        f"| mean provision | {statistics.mean(provision):.2f} | | |",
        "",
    ]


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    given = os.environ.get("OASIS_BENCH_KUBECONFIG")
    if given:
        lines = run(Path(given), rounds)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            plane = LocalControlPlane(run_dir=Path(tmp) / "cluster")
            plane.start()
            try:
                lines = run(plane.kubeconfig, rounds)
            finally:
                plane.stop()
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
