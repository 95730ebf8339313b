"""The top costs of a py-spy profile (collapsed stacks, `--format raw`) as markdown tables.

Usage: .venv/bin/python bench/profile_top.py RAW [N]   (default N: 10)

py-spy counts a thread blocked in a socket read or a lock as active, so the self-time table mostly
names what threads wait in; the parts table says for which part of a scenario, split into samples on
CPU and samples waiting (socket read, lock, select, sleep, an idle worker).

Self: samples whose innermost frame is the function. Total: samples with one of our own functions
(oasis_operator) anywhere on the stack, counted once per sample. Functions are named
`module.function` without line numbers, so the loops of one function add up.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "operator" / "oasis_operator"
OUR_FILES = {p.name for p in PACKAGE.rglob("*.py")} - {"__init__.py"}
FRAME = re.compile(r"^(?P<func>.+?) \((?P<path>[^()]*?)(?::\d+)?\)$")


def _short(path: str) -> str:
    for marker in ("site-packages/", "oasis_operator/", "lib/python3.11/"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            return ("oasis_operator/" if marker == "oasis_operator/" else "") + tail
    return path.rsplit("/", 1)[-1]


def _name(frame: str) -> str:
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    module = _short(match["path"]).removesuffix(".py").replace("/", ".")
    return f"{module}.{match['func']}"


def _ours(frame: str) -> bool:
    match = FRAME.match(frame.strip())
    return match is not None and (
        "oasis_operator/" in match["path"] or match["path"].rsplit("/", 1)[-1] in OUR_FILES
    )


def top(raw: str, count: int = 10) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    """(samples, top self, top total of our own functions) of the collapsed stacks in `raw`."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in raw.splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            continue
        frames = [_name(f) for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        n = int(number)
        samples += n
        own[frames[-1]] += n
        raw_frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        for name in {_name(f) for f in raw_frames if _ours(f)}:
            total[name] += n
    return samples, own.most_common(count), total.most_common(count)


# (a frame on the stack, the part of the scenario it belongs to); the first match wins.
PARTS = (
    ("ensure_default_service_account", "provision: default ServiceAccounts"),  # also on the pool's threads
    ("SandboxProvider.snapshot", "provision / after-snapshot: snapshot reads"),
    ("read_snapshot", "provision / after-snapshot: snapshot reads"),  # also on the snapshot pool's threads
    ("SandboxProvider._create_twin_object", "provision: namespaces, RBAC, twin objects"),  # wave threads
    ("SandboxProvider.provision", "provision: namespaces, RBAC, twin objects"),
    ("SandboxProvider.teardown", "teardown"),
    ("ScenarioRunner._teardown", "teardown"),
    ("reconcile_once", "dynamics"),
    ("ApiServerAudit.subscribe", "credentials: audit subscription"),
    ("Gateway.register", "credentials: gateway"),
    ("ApiServerAudit.close", "evidence: API-server audit close"),
    ("Gateway.evidence", "evidence: gateway record"),
    ("build_bundle", "evidence: bundle"),
    ("evaluate_scenario", "engine"),
    ("bounded_json", "storage: serialise"),
    ("DocumentStore", "storage: ConfigMaps"),
    ("StatusWriter", "status writes"),
    ("AuditFileTail", "audit file tail (background thread)"),
    ("HttpAdapter", "agent adapter"),
    ("build_documents", "verdict and report"),
)
WAITING = ("SSLSocket.read", "Condition.wait", "select (", "do_poll", "sleep", "_worker (concurrent")


def parts(raw: str) -> list[tuple[str, int, int]]:
    """(part, samples on CPU, samples waiting), largest first."""
    counts: Counter[tuple[str, bool]] = Counter()
    for line in raw.splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            continue
        leaf = stack.rsplit(";", 1)[-1]
        waiting = any(w in leaf for w in WAITING)
        part = next((name for key, name in PARTS if key in stack), "other (event loop, idle workers)")
        counts[(part, waiting)] += int(number)
    names = {p for p, _ in counts}
    rows = [(p, counts[(p, False)], counts[(p, True)]) for p in names]
    return sorted(rows, key=lambda r: -(r[1] + r[2]))


def markdown(raw: str, count: int = 10) -> str:
    samples, own, total = top(raw, count)
    out = [f"{samples:,} samples (non-idle).", "", f"Top {count} by self time:", "",
           "| # | function | self samples | share |", "| --- | --- | --- | --- |"]  # fmt: skip
    out += [f"| {i} | `{name}` | {n:,} | {100 * n / samples:.1f}% |" for i, (name, n) in enumerate(own, 1)]
    out += ["", f"Top {count} of our own functions by total time (anywhere on the stack):", "",
            "| # | function | samples | share |", "| --- | --- | --- | --- |"]  # fmt: skip
    out += [f"| {i} | `{name}` | {n:,} | {100 * n / samples:.1f}% |" for i, (name, n) in enumerate(total, 1)]
    out += [
        "",
        "By part of a scenario:",
        "",
        "| part | samples on CPU | samples waiting |",
        "| --- | --- | --- |",
    ]
    out += [f"| {p} | {cpu:,} | {wait:,} |" for p, cpu, wait in parts(raw)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(markdown(Path(sys.argv[1]).read_text(), int(sys.argv[2]) if len(sys.argv) > 2 else 10))
