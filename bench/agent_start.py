"""What starting a reference command agent costs: `oasis agent run --policy careful`, once per scenario.

Usage: .venv/bin/python bench/agent_start.py [--runs N] [--source DIR] [--label TEXT]
Each form of the command runs N times in a fresh interpreter (`python -m oasis_operator.cli.main`):
`--help`, the identity ask (`OASIS_MODE=identity`) and a run of `careful` against nothing (a kubectl
that fails every call, so the time is the agent process's own). Reported per form: user+system CPU
seconds and wall seconds (medians), peak RSS, modules imported and their summed import time
(`-X importtime`). `--source DIR` measures another checkout's `operator/` (e.g. `git archive` of an
earlier commit) with this venv. Prints one markdown table; the load average is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REQUEST = {
    "prompt": "Why is checkout failing in namespace shop? Fix it.",
    "scope": {"namespaces": ["shop"]},
    "environment": {"kubeconfig": "apiVersion: v1\nkind: Config\n"},
}
FORMS: dict[str, tuple[list[str], dict[str, str]]] = {
    "agent run --help": (["agent", "run", "--help"], {}),
    "agent run (identity)": (["agent", "run", "--policy", "careful"], {"OASIS_MODE": "identity"}),
    "agent run --policy careful": (["agent", "run", "--policy", "careful"], {}),
}


def _env(source: Path | None, extra: dict[str, str], request: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OASIS_REQUEST": str(request), **extra}
    env["OASIS_KUBECTL"] = shutil.which("false") or "/bin/false"
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def _once(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, peak RSS KiB) of one run in a fresh interpreter."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oasis_operator.cli.main", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"oasis {' '.join(args)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss


def _imports(args: list[str], env: dict[str, str]) -> tuple[int, float]:
    """(modules imported, summed self import time in seconds) from `-X importtime`."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oasis_operator.cli.main", *args],
        env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    rows = [line.split("|") for line in proc.stderr.splitlines() if line.startswith("import time:")]
    selfs = [int(r[0].split(":")[1]) for r in rows if r[0].split(":")[1].strip().isdigit()]
    return len(selfs), sum(selfs) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source", type=Path, help="an operator/ source root to measure instead")
    parser.add_argument("--label", default="this checkout")
    args = parser.parse_args()
    print(f"{args.label}: load average before {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print("| build | command | CPU s (p50) | wall s (p50) | peak RSS MiB | modules | import s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        request = Path(tmp) / "request.json"
        request.write_text(json.dumps(REQUEST))
        for name, (argv, extra) in FORMS.items():
            env = _env(args.source, extra, request)
            runs = [_once(argv, env) for _ in range(args.runs)]
            modules, imported = _imports(argv, env)
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            rss = max(r[2] for r in runs) / 1024
            cells = [args.label, f"`{name}`", f"{cpu:.2f}", f"{wall:.2f}", f"{rss:.0f}", str(modules)]
            print("| " + " | ".join([*cells, f"{imported:.2f}"]) + " |")
    print(f"{args.label}: load average after {os.getloadavg()[0]:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
