"""The top costs of a py-spy profile (collapsed stacks, `--format raw`) as markdown tables.

Usage: .venv/bin/python bench/profile_top.py RAW [N]   (default N: 10)

Self: samples whose innermost frame is the function. Total: samples with the function anywhere on the
stack (counted once per sample). Functions are named `module.function` without line numbers, so the
loops of one function add up; paths are shortened to the package (site-packages or our own).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

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


def top(raw: str, count: int = 10) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    """(samples, top self, top total) of the collapsed stacks in `raw`."""
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
        for name in set(frames):
            total[name] += n
    return samples, own.most_common(count), total.most_common(count)


def markdown(raw: str, count: int = 10) -> str:
    samples, own, total = top(raw, count)
    out = [f"{samples:,} samples (non-idle).", "", f"Top {count} by self time:", "",
           "| # | function | self samples | share |", "| --- | --- | --- | --- |"]  # fmt: skip
    out += [f"| {i} | `{name}` | {n:,} | {100 * n / samples:.1f}% |" for i, (name, n) in enumerate(own, 1)]
    out += ["", f"Top {count} by total time (function anywhere on the stack):", "",
            "| # | function | samples | share |", "| --- | --- | --- | --- |"]  # fmt: skip
    out += [f"| {i} | `{name}` | {n:,} | {100 * n / samples:.1f}% |" for i, (name, n) in enumerate(total, 1)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(markdown(Path(sys.argv[1]).read_text(), int(sys.argv[2]) if len(sys.argv) > 2 else 10))
