"""Host API calls that wait out a short outage instead of failing the run (bounded)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from oasis_operator.kube import is_transient

log = logging.getLogger(__name__)
T = TypeVar("T")
DEFAULT_PATIENCE = 300.0


@dataclass(frozen=True)
class Patience:
    """How long a host API call that fails transiently is retried (the operator's OASIS_HOST_PATIENCE)."""

    seconds: float = DEFAULT_PATIENCE

    async def __call__(self, call: Callable[[], T], what: str) -> T:
        """Run the blocking `call` in a thread; retry transient failures with backoff until the patience
        ends.

        A permanent error (a 4xx answer, bad input) is raised at once; a transient one (connection
        refused, timeout, 5xx, 429) is retried, and raised once the patience is spent.
        """
        deadline = time.monotonic() + self.seconds
        delay = 0.5
        while True:
            try:
                return await asyncio.to_thread(call)
            except Exception as exc:
                if not is_transient(exc) or time.monotonic() + delay > deadline:
                    raise
                log.warning("host API call failed, will retry what=%s delay=%.1fs error=%r", what, delay, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
