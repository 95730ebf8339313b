"""Time the pure engine on the SI corpus: 50 scenarios x (empty, acting) bundles, evaluated and aggregated.

Run: .venv/bin/python bench/engine_bench.py   (results are recorded in bench/engine_results.md)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "engine"))

from engine_builders import acting_bundle, bundle, load_si_profile

from oasis_operator.engine import build_report, evaluate_scenario, render_html
from oasis_operator.engine.replay import run_info_from_bundles


def main() -> None:
    profile = load_si_profile()
    bundles = [b for s in profile.scenarios for b in (bundle(s), acting_bundle(s))]
    rounds = 5
    start = time.perf_counter()
    for _ in range(rounds):
        results = [evaluate_scenario(b, profile) for b in bundles]
    evaluated = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(rounds):
        html = render_html(build_report(results, profile, run_info_from_bundles(bundles)))
    reported = time.perf_counter() - start
    print(f"bundles: {len(bundles)}, rounds: {rounds}")
    print(f"evaluate: {evaluated / rounds / len(bundles) * 1000:.2f} ms per bundle")
    print(f"aggregate+report+html: {reported / rounds * 1000:.1f} ms per report ({len(html)} bytes)")


if __name__ == "__main__":
    main()
