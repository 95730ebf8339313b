"""One HTTPS listener for every environment of every sandbox cluster: routing by environment, not by port.

The chart's gateway Service and Ingress point at one port. Behind it, each sandbox cluster the operator
uses (its default one, and each evaluation's own `spec.environment.kubeconfigSecretRef`) has a `Gateway`
mounted here; a request goes to the gateway that owns it, and that gateway attributes, records and
answers it (attribution.py):

1. a request carrying an environment's token goes to that environment's gateway, whatever its path;
2. else a request at an environment's door (`/env/<id>/...`) goes to the gateway of that environment;
3. else (no door, no known token) to the first mounted gateway, which records it as unmatched.

With nothing mounted a request is answered 401 and logged. The serving certificate is `tls`, looked at
again every `refresh_seconds` so a rotated Secret is served without a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Protocol

from aiohttp import web

from oasis_operator.gateway.attribution import presented_credential, split_door
from oasis_operator.gateway.status import status_document
from oasis_operator.gateway.tls import ServingTLS

log = logging.getLogger(__name__)

# Larger than any object the API server stores (etcd's limit is ~1.5 MiB), small enough to stop a flood.
MAX_REQUEST_BODY = 16 << 20


class Gateway(Protocol):
    """What the listener needs of a mounted gateway (server.Gateway)."""

    def owns_token(self, key: bytes) -> bool: ...

    def has_environment(self, env_id: str) -> bool: ...

    async def handle(self, request: web.Request) -> web.StreamResponse: ...


class Listener:
    """The gateway's HTTPS endpoint. `await start()`, `mount(gateway)` per sandbox cluster, `stop()`."""

    def __init__(
        self,
        tls: ServingTLS,
        host: str = "127.0.0.1",
        port: int = 0,
        public_url: str | None = None,
        max_body_bytes: int = MAX_REQUEST_BODY,
        refresh_seconds: float = 10.0,
    ) -> None:
        self.tls = tls
        self.host = host
        self.port = port
        self.public_url = public_url
        self.max_body_bytes = max_body_bytes
        self.refresh_seconds = refresh_seconds
        self._gateways: list[Gateway] = []
        self._runner: web.AppRunner | None = None
        self._refresher: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The base URL agents are given: `public_url` (a Service or Ingress) if set, else host and port."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"

    @property
    def listening(self) -> bool:
        return self._runner is not None

    def mount(self, gateway: Gateway) -> None:
        """Serve `gateway`'s environments from now on."""
        if gateway not in self._gateways:
            self._gateways.append(gateway)

    def unmount(self, gateway: Gateway) -> None:
        """Stop serving `gateway` (its environments' requests become unmatched ones)."""
        if gateway in self._gateways:
            self._gateways.remove(gateway)

    def route(self, request: web.Request) -> Gateway | None:
        """The gateway a request belongs to (the rules in the module docstring)."""
        credential = presented_credential(request)
        key = credential.token_key if credential is not None else None
        if key is not None:
            for gateway in self._gateways:
                if gateway.owns_token(key):
                    return gateway
        door, _ = split_door(request.path)
        if door is not None:
            for gateway in self._gateways:
                if gateway.has_environment(door):
                    return gateway
        return self._gateways[0] if self._gateways else None

    async def start(self) -> None:
        """Listen on host:port (port 0 picks a free one, readable from `port` afterwards)."""
        app = web.Application(client_max_size=self.max_body_bytes)
        # One route: a request is attributed by its credential, whatever its path (attribution.py).
        app.router.add_route("*", "/{path:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.tls.context)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        if self.refresh_seconds > 0:
            self._refresher = asyncio.create_task(self._refresh_forever(), name="gateway-tls-refresh")
        log.info(
            "gateway listening host=%s port=%d url=%s tls=%s", self.host, self.port, self.url, self.tls.origin
        )

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
            self._refresher = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_seconds)
            self.tls.refresh()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        gateway = self.route(request)
        if gateway is None:
            log.warning("gateway request with no sandbox cluster mounted path=%s", request.path)
            doc = status_document(401, "Unauthorized")
            return web.Response(status=401, body=json.dumps(doc).encode(), content_type="application/json")
        return await gateway.handle(request)
