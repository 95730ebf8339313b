"""The operator process's C heap: fewer allocator arenas, and freed memory handed back after each run.

What an evaluation allocates is freed when it ends: the live Python heap after a whole-profile
evaluation is a few MiB (`bench/memory_growth.py`). The process's RSS stays near the evaluation's peak,
though, because glibc keeps freed memory for reuse, in one arena per thread that allocated (the event
loop and the worker threads of `asyncio.to_thread`, up to eight arenas per core). So at start the number
of arenas is capped, and after each evaluation the operator collects its garbage and asks the allocator
to return free pages (`malloc_trim`). Both are glibc calls; on another C library they do nothing.
"""

from __future__ import annotations

import ctypes
import gc
import logging

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # mallopt's parameter number for the arena cap (glibc malloc.h)
ARENAS = 2


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def cap_arenas(count: int = ARENAS) -> bool:
    """Let the allocator make at most `count` arenas from now on; False where that cannot be set."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None)
    return bool(mallopt is not None and mallopt(M_ARENA_MAX, count) == 1)


def trim() -> bool:
    """Collect garbage, then return the allocator's free pages to the system; False where it cannot."""
    gc.collect()
    malloc_trim = getattr(_libc(), "malloc_trim", None)
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True
