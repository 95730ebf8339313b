"""Measure the local control plane's start (to /readyz ok) and stop times; writes a markdown table.

Usage: .venv/bin/python bench/control_plane_start.py [ROUNDS]
The first round includes certificate generation; later rounds reuse the run directory as `oasis cluster up`
does on a machine that ran it before.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from oasis_operator.localcluster import LocalControlPlane

OUT = Path(__file__).parent / "results" / "control_plane_start.md"


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    starts, stops = [], []
    with tempfile.TemporaryDirectory() as tmp:
        plane = LocalControlPlane(run_dir=Path(tmp) / "cluster")
        first_start = time.perf_counter()
        plane.start()
        first = time.perf_counter() - first_start
        plane.stop()
        for _ in range(rounds):
            t0 = time.perf_counter()
            plane.start()
            starts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plane.stop()
            stops.append(time.perf_counter() - t0)
    lines = [
        "# Local control plane: start and stop",
        "",
        f"Machine: 2 cores. Rounds: {rounds} (after a first start that also makes the certificates).",
        "",
        "| measure | seconds |",
        "| --- | --- |",
        f"| first start incl. certificates | {first:.2f} |",
        f"| start to /readyz, median | {statistics.median(starts):.2f} |",
        f"| start to /readyz, max | {max(starts):.2f} |",
        f"| stop, median | {statistics.median(stops):.2f} |",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
