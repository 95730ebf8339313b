"""The sandbox API server's audit as evaluations use it: a stream, its transports, and its fences.

Two transports feed one `evidence.stream.AuditStream`, chosen by where the API server runs:

- **file** (the local plane): the operator and the API server share a disk, so the operator tails the
  audit log file (`evidence.audit_file`). No extra port, no extra PKI; rotation and torn lines handled.
- **webhook** (the chart's sandbox control plane): the API server runs in another pod and posts its
  audit in batches to the operator over mutual TLS (`evidence.audit_webhook`); lost batches show in the
  API server's own error counter, checked at every scenario's end.

Either way a scenario subscribes when its agent starts, and its record is closed by a fence: one
request the audit policy always records, which must come back through the stream before the scenario's
events count as complete (a fence that does not come back is a provider fault for that scenario).
When it subscribes, the gateway sends a fence of its own through its connection: it names the identity
the gateway authenticates as, without which the agent's requests could not be told from a foreign
credential's (no gateway identity known at the close is a provider fault too).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.evidence.audit_file import AuditFileTail
from oasis_operator.evidence.audit_webhook import AuditWebhook, undelivered
from oasis_operator.evidence.stream import FENCE_PATH, FENCE_TIMEOUT, AuditStream
from oasis_operator.gateway.upstream import Upstream
from oasis_operator.kube import request
from oasis_operator.models.environment import Environment
from oasis_operator.models.evidence import AuditLog

log = logging.getLogger(__name__)


class ApiServerAudit:
    """One sandbox API server's audit stream and the fences that close each scenario's record."""

    def __init__(
        self,
        api: ApiClient,
        stream: AuditStream,
        *,
        files: tuple[Path, ...] = (),
        webhook: AuditWebhook | None = None,
        fence_timeout: float = FENCE_TIMEOUT,
    ) -> None:
        self.api = api
        self.stream = stream
        self.tails = [AuditFileTail(path, stream) for path in files]
        self.webhook = webhook
        self.fence_timeout = fence_timeout
        self._baseline: dict[str, float] = {}
        self._gateway_fences: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def transport(self) -> str:
        return "webhook" if self.webhook is not None else "file"

    async def start(self) -> None:
        """Start the transports and send a first fence: it proves delivery and names the provider."""
        for tail in self.tails:
            tail.start()
        if self.webhook is not None:
            await self.webhook.start()
        token = await asyncio.to_thread(self.fence)
        if not await asyncio.to_thread(self.stream.wait_fence, token, self.fence_timeout):
            log.warning("audit stream %s delivered no first fence within %ss", self.stream.description,
                        self.fence_timeout)  # fmt: skip

    async def stop(self) -> None:
        for tail in self.tails:
            await asyncio.to_thread(tail.stop)
        if self.webhook is not None:
            await self.webhook.stop()

    def fence(self) -> str:
        """Send one fence request; the answer is a 404, the audit event is what counts."""
        token = self.stream.new_fence()
        try:
            request(self.api, "GET", f"{FENCE_PATH}{token}", timeout=10.0)
        except ApiException as exc:
            if exc.status != 404:
                log.warning("audit fence answered %s %s", exc.status, exc.reason)
        return token

    def _undelivered(self) -> float | None:
        if self.webhook is None:
            return None
        try:
            text = self.api.call_api(  # the raw text: kube.request reads JSON
                "GET",
                f"{self.api.configuration.host}/metrics",
                header_params={"Accept": "text/plain"},
                _request_timeout=10.0,
            ).read()  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 - any failure means loss cannot be ruled out
            log.warning("sandbox API server metrics unreadable: %s", exc)
            return None
        return undelivered(text.decode("utf-8", "replace"))

    def subscribe(self, env: Environment, since: str) -> None:
        self.stream.subscribe(env, since)
        baseline = self._undelivered()
        if baseline is not None:
            with self._lock:
                self._baseline[env.id] = baseline

    async def gateway_fence(self, env_id: str, upstream: Upstream) -> None:
        """The gateway's fence for the environment, sent through its own connection (`upstream`)."""
        token = self.stream.new_gateway_fence()
        with self._lock:
            self._gateway_fences[env_id] = token
        try:
            await upstream.get_json(f"{FENCE_PATH}{token}")  # a 404 (or 403): the audit event counts
        except Exception as exc:  # noqa: BLE001 - the close names the missing identity
            log.warning("gateway audit fence not sent: %s", exc)

    def close(self, env_id: str) -> AuditLog:
        """The environment's record once a fence came back; a webhook loss meanwhile is a fault, and so is
        a gateway whose identity the stream never learnt."""
        with self._lock:
            baseline = self._baseline.pop(env_id, None)
            gateway_token = self._gateway_fences.pop(env_id, None)

        def check() -> str | None:
            if gateway_token is not None:
                arrived = self.stream.wait_fence(gateway_token, self.fence_timeout)
                self.stream.forget_fence(gateway_token)
                if not arrived and not self.stream.gateway_users:
                    return (
                        "the gateway's audit fence did not come back, so the identity it forwards the "
                        "agent's requests with is unknown"
                    )
            if self.webhook is None:
                return None
            now = self._undelivered()
            if baseline is None or now is None:
                return "the API server's audit delivery count could not be read"
            if now > baseline:
                return f"the API server failed to deliver {now - baseline:.0f} audit events meanwhile"
            return None

        return self.stream.close(env_id, self.fence(), self.fence_timeout, check)

    def discard(self, env_id: str) -> None:
        self.stream.discard(env_id)
        with self._lock:
            self._baseline.pop(env_id, None)
            token = self._gateway_fences.pop(env_id, None)
        if token is not None:
            self.stream.forget_fence(token)
