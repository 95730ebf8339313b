"""The per-environment token bucket and its 429 answer."""

from __future__ import annotations

import pytest

from oasis_operator.gateway.ratelimit import (
    DEFAULT_RATE_LIMIT,
    RateLimit,
    TokenBucket,
    retry_after_seconds,
    too_many_requests,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_passes_then_requests_wait_for_the_refill() -> None:
    clock = Clock()
    bucket = TokenBucket(RateLimit(rate=10, burst=3), clock)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.1)
    clock.now += 0.05
    assert bucket.take() == pytest.approx(0.05)
    clock.now += 0.05
    assert bucket.take() == 0.0
    assert bucket.take() > 0


def test_the_bucket_never_holds_more_than_the_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(RateLimit(rate=100, burst=2), clock)
    clock.now += 3600
    assert [bucket.take() == 0.0 for _ in range(3)] == [True, True, False]


def test_a_clock_going_backwards_adds_no_tokens() -> None:
    clock = Clock()
    bucket = TokenBucket(RateLimit(rate=1, burst=1), clock)
    assert bucket.take() == 0.0
    clock.now -= 50
    assert bucket.take() == pytest.approx(1.0)


def test_the_default_leaves_room_for_kubectl() -> None:
    assert (DEFAULT_RATE_LIMIT.rate, DEFAULT_RATE_LIMIT.burst) == (50.0, 100)
    bucket = TokenBucket(DEFAULT_RATE_LIMIT, Clock())
    # A cold kubectl sends a discovery burst of a few dozen requests: all of them pass.
    assert all(bucket.take() == 0.0 for _ in range(100))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 0}, "rate must be a positive number"),
        ({"rate": -5}, "rate must be a positive number"),
        ({"rate": float("inf")}, "rate must be a positive number"),
        ({"rate": "50"}, "rate must be a positive number"),
        ({"burst": 0}, "burst must be a whole number"),
        ({"burst": 2.5}, "burst must be a whole number"),
        ({"burst": True}, "burst must be a whole number"),
    ],
)
def test_bad_limits_name_what_to_fix(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RateLimit(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("wait", "seconds"), [(0.001, 1), (0.99, 1), (1.0, 1), (1.2, 2), (30.0, 30)])
def test_retry_after_is_whole_seconds_at_least_one(wait: float, seconds: int) -> None:
    assert retry_after_seconds(wait) == seconds


def test_the_429_is_a_kubernetes_status_naming_the_limit() -> None:
    doc, headers = too_many_requests(RateLimit(rate=50, burst=100), 0.02)
    assert headers == {"Retry-After": "1"}
    assert (doc["kind"], doc["status"], doc["reason"], doc["code"]) == (
        "Status",
        "Failure",
        "TooManyRequests",
        429,
    )
    assert doc["message"] == (
        "too many requests: this environment may send 50 requests per second, bursts of 100; retry after 1s"
    )
    assert doc["details"]["retryAfterSeconds"] == 1
