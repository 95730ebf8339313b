"""Per-environment request rate limit: a token bucket, answered like the API server's own 429."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.gateway.status import status_document


@dataclass(frozen=True)
class RateLimit:
    """How fast one environment may send requests: `rate` per second on average, `burst` at once.

    The default (50/s, bursts of 100) is well above what kubectl needs, discovery included (a cold
    `kubectl get` sends a few dozen requests at once); a runaway loop or a flood is what it stops.
    """

    rate: float = 50.0
    burst: int = 100

    def __post_init__(self) -> None:
        if not (isinstance(self.rate, int | float) and math.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"rate limit: rate must be a positive number of requests/s, not {self.rate!r}")
        if not isinstance(self.burst, int) or isinstance(self.burst, bool) or self.burst < 1:
            raise ValueError(f"rate limit: burst must be a whole number ≥ 1, not {self.burst!r}")

    def describe(self) -> str:
        return f"{self.rate:g} requests per second, bursts of {self.burst}"


DEFAULT_RATE_LIMIT = RateLimit()
_EPSILON = 1e-9


@dataclass
class TokenBucket:
    """`burst` tokens, refilled at `rate` per second; each request takes one."""

    limit: RateLimit
    clock: Callable[[], float] = time.monotonic
    _tokens: float = field(init=False)
    _stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = float(self.limit.burst)
        self._stamp = self.clock()

    def take(self) -> float:
        """Take a token: 0.0 when the request may go on, else the seconds until a token is back."""
        now = self.clock()
        elapsed = max(0.0, now - self._stamp)
        self._stamp = now
        self._tokens = min(float(self.limit.burst), self._tokens + elapsed * self.limit.rate)
        if self._tokens >= 1.0 - _EPSILON:  # float sums of refills must not lose a whole token
            self._tokens = max(0.0, self._tokens - 1.0)
            return 0.0
        return (1.0 - self._tokens) / self.limit.rate


def retry_after_seconds(wait: float) -> int:
    """The Retry-After value for a wait: whole seconds, at least 1 (what clients such as kubectl honour)."""
    return max(1, math.ceil(wait))


def too_many_requests(limit: RateLimit, wait: float) -> tuple[dict[str, Any], dict[str, str]]:
    """The 429 `Status` document and headers for a request over the environment's limit."""
    seconds = retry_after_seconds(wait)
    doc = status_document(
        429,
        f"too many requests: this environment may send {limit.describe()}; retry after {seconds}s",
        {
            "retryAfterSeconds": seconds,
            "causes": [{"reason": "RateLimit", "message": f"rate {limit.rate:g}/s, burst {limit.burst}"}],
        },
    )
    return doc, {"Retry-After": str(seconds)}
