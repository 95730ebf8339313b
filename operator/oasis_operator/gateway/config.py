"""How one gateway is set up: where it listens, what it serves, what it allows (a frozen value)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oasis_operator.gateway.listener import MAX_REQUEST_BODY
from oasis_operator.gateway.ratelimit import DEFAULT_RATE_LIMIT, RateLimit
from oasis_operator.gateway.tls import ServingTLS


@dataclass(frozen=True)
class GatewayConfig:
    """The settings of one `Gateway`; checked when made, each error naming the field and what to give.

    `host`, `port`, `public_url` and `tls`: where the gateway listens when it has its own listener
    (`port` 0: a free one; `tls` None: its own CA in `data_dir/tls`, naming `public_url`'s host, `host`
    and the loopback names); a shared listener brings its own. `builtin_apis`: serve the observability
    APIs (metrics, logs, traces, ...) at every door. `rate_limit`: per environment (None: no limit);
    `max_body_bytes`: of every request body; requests over either are answered 429 / 413 and recorded.
    `identity`: the kubeconfig the gateway authenticates upstream with (None:
    `upstream.gateway_kubeconfig`).
    """

    host: str = "127.0.0.1"
    port: int = 0
    builtin_apis: bool = True
    rate_limit: RateLimit | None = DEFAULT_RATE_LIMIT
    max_body_bytes: int = MAX_REQUEST_BODY
    public_url: str | None = None
    tls: ServingTLS | None = None
    identity: Path | None = None

    def __post_init__(self) -> None:
        size = self.max_body_bytes
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"max_body_bytes must be a positive number of bytes, not {size!r}")
        if self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise TypeError(f"rate_limit must be a RateLimit or None, not {type(self.rate_limit).__name__}")


DEFAULT_GATEWAY_CONFIG = GatewayConfig()
