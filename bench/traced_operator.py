"""`oasis operator` with a memory dump on SIGUSR1: live objects by type (after a full collection) and,
when OASIS_BENCH_TRACEMALLOC is a frame count, a tracemalloc snapshot.

Usage: .venv/bin/python bench/traced_operator.py DUMP_DIR operator -n NS ...   (the `oasis` arguments)

Tracing starts at the first SIGUSR1 (imports under tracemalloc take minutes on a loaded machine), so
snapshots hold what was allocated since then: enough to see what grows between later dumps. Each
SIGUSR1 writes DUMP_DIR/N.types.json (type name -> live count) and DUMP_DIR/N.snapshot (tracemalloc),
DUMP_DIR/N.rss.json (RSS in KiB before and after glibc's malloc_trim), then DUMP_DIR/N.done, N counting
from 0. `bench/memory_growth.py` drives it.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import sys
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from oasis_operator.cli.main import main


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _malloc_trim() -> bool:
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def _dumper(out: Path, frames: int) -> Callable[[int, object], None]:
    count = 0

    def dump(_signum: int, _frame: object) -> None:
        nonlocal count
        gc.collect()
        types = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
        (out / f"{count}.types.json").write_text(json.dumps(dict(types.most_common())))
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(str(out / f"{count}.snapshot"))
        elif frames:
            tracemalloc.start(frames)
        # How much of the RSS is freed memory the C allocator still holds: RSS before and after trimming.
        before = _rss_kib()
        trimmed = _malloc_trim()
        (out / f"{count}.rss.json").write_text(
            json.dumps({"before": before, "after": _rss_kib(), "trim": trimmed})
        )
        (out / f"{count}.done").write_text("")
        count += 1

    return dump


if __name__ == "__main__":
    dump_dir = Path(sys.argv[1])
    dump_dir.mkdir(parents=True, exist_ok=True)
    frames = int(os.environ.get("OASIS_BENCH_TRACEMALLOC") or 0)
    signal.signal(signal.SIGUSR1, _dumper(dump_dir, frames))
    sys.exit(main(sys.argv[2:]))
