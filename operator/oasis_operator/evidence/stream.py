"""The API server's audit as a stream routed to the environments watching it, as it happens.

A transport (`evidence.audit_file.AuditFileTail` on the local plane, `evidence.audit_webhook` for the
chart's sandbox control plane) hands each event, or each complete JSON line, to `AuditStream`. While an
environment is subscribed, the events that belong to it are kept with it; everything else is dropped
without being parsed (a line that does not contain the environment id cannot belong to it: every
sandbox name carries it). Per-scenario cost is therefore proportional to the scenario's own events and
to the traffic while it runs, never to the log's history.

Delivery is checked end to end with a *fence*: when a scenario ends, the provider sends one request the
audit policy always records (`GET /audit-fence/<token>`), and the scenario's record is closed only once
that event came back through the stream. A fence that does not arrive within its bound, a line that
cannot be parsed, a line still torn past its bound, or a transport's own loss report is a fault: every
environment subscribed at that moment gets an `unreachable` source naming the cause, never a silently
shorter record. The identity that sent a fence is the provider's own: that is how the stream learns it.
The gateway sends fences of its own (`gateway-<token>`) through its connection, so the stream learns
the identity the gateway authenticates as, whose requests impersonating the agent are the agent's.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.evidence.apiserver import Identities, audit_log, username_of
from oasis_operator.models.environment import Environment
from oasis_operator.models.evidence import AuditLog

FENCE_PATH = "/audit-fence/"
FENCE_TIMEOUT = 15.0
GATEWAY_FENCE = "gateway-"


@dataclass
class _Subscription:
    env: Environment
    since: str
    events: list[Mapping[str, Any]] = field(default_factory=list)
    fault: str | None = None


class AuditStream:
    """Thread-safe router: transports feed it, scenario runs subscribe and close."""

    def __init__(
        self, description: str, provider_users: Iterable[str] = (), gateway_users: Iterable[str] = ()
    ) -> None:
        self.description = description
        self._cond = threading.Condition()
        self._subs: dict[str, _Subscription] = {}
        self._fences: dict[str, str] = {}
        self._provider_users = set(provider_users)
        self._gateway_users = set(gateway_users)
        self.faults: list[str] = []

    @property
    def provider_users(self) -> frozenset[str]:
        with self._cond:
            return frozenset(self._provider_users)

    @property
    def gateway_users(self) -> frozenset[str]:
        with self._cond:
            return frozenset(self._gateway_users)

    def _identities(self) -> Identities:
        return Identities(frozenset(self._provider_users), frozenset(self._gateway_users))

    # --- transports ----------------------------------------------------------------------------------
    def wanted(self, line: str) -> bool:
        """Cheap pre-check on a raw line: could it be a fence or belong to a subscribed environment?"""
        if FENCE_PATH in line:
            return True
        with self._cond:
            return any(env_id in line for env_id in self._subs)

    def feed_line(self, line: str, where: str) -> None:
        """One complete JSON line; `where` names its place (file and offset) should it not parse."""
        if not self.wanted(line):
            return
        try:
            event = json.loads(line)
        except ValueError as exc:
            self.fault(f"{where}: audit line does not parse: {exc}")
            return
        if isinstance(event, dict):
            self.feed([event])

    def feed(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Parsed events (a webhook batch, or lines that passed `wanted`)."""
        with self._cond:
            for event in events:
                uri = str(event.get("requestURI", ""))
                if uri.startswith(FENCE_PATH):
                    token = uri[len(FENCE_PATH) :].split("?", maxsplit=1)[0]
                    user = username_of(event.get("user"))
                    self._fences[token] = user
                    if user:
                        users = (
                            self._gateway_users if token.startswith(GATEWAY_FENCE) else self._provider_users
                        )
                        users.add(user)
                    continue
                text = None
                for env_id, sub in self._subs.items():
                    if text is None:
                        text = json.dumps(event.get("objectRef") or {}) + json.dumps(event.get("user") or {})
                        text += json.dumps(event.get("impersonatedUser") or {})
                    if env_id in text:
                        sub.events.append(event)
            self._cond.notify_all()

    def fault(self, detail: str) -> None:
        """Events may have been lost: every environment subscribed now gets an unreachable source."""
        with self._cond:
            self.faults.append(detail)
            for sub in self._subs.values():
                sub.fault = sub.fault or f"{self.description}: {detail}"
            self._cond.notify_all()

    # --- scenario runs -------------------------------------------------------------------------------
    def subscribe(self, env: Environment, since: str) -> None:
        """Keep the environment's events received from `since` (RFC 3339) until `close`."""
        with self._cond:
            self._subs[env.id] = _Subscription(env=env, since=since)

    def discard(self, env_id: str) -> None:
        """Stop keeping the environment's events (a run that ended without `close`); idempotent."""
        with self._cond:
            self._subs.pop(env_id, None)

    @staticmethod
    def new_fence() -> str:
        return secrets.token_hex(8)

    @staticmethod
    def new_gateway_fence() -> str:
        """A fence token for the gateway to send: its sender is learnt as the gateway's identity."""
        return GATEWAY_FENCE + secrets.token_hex(8)

    def wait_fence(self, token: str, timeout: float = FENCE_TIMEOUT) -> bool:
        """True once the fence request `token` came back through the stream."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while token not in self._fences:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def forget_fence(self, token: str) -> None:
        """Drop what is kept of a fence (its sender stays learnt); idempotent."""
        with self._cond:
            self._fences.pop(token, None)

    def close(
        self,
        env_id: str,
        fence: str | None,
        timeout: float = FENCE_TIMEOUT,
        delivery_check: Callable[[], str | None] | None = None,
    ) -> AuditLog:
        """The environment's record, once the fence arrived; stops keeping its events."""
        arrived = fence is None or self.wait_fence(fence, timeout)
        problem = None if delivery_check is None else delivery_check()
        with self._cond:
            sub = self._subs.pop(env_id)
            if fence is not None:
                self._fences.pop(fence, None)
            ours = self._identities()
        fault = sub.fault
        if fault is None and not arrived:
            fault = (
                f"{self.description}: the audit stream did not deliver the end-of-scenario fence within "
                f"{timeout:.0f}s; events may be lost or delayed"
            )
        if fault is None and problem is not None:
            fault = f"{self.description}: {problem}"
        # Whole seconds, as the two clocks (operator, API server) may differ slightly in the chart.
        since = sub.since[:19]
        events = [e for e in sub.events if str(e.get("requestReceivedTimestamp", ""))[:19] >= since]
        return audit_log(events, sub.env, ours, fault)
