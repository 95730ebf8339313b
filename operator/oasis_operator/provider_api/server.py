"""The OASIS provider API over HTTPS: `GET /v1/conformance`, `POST /v1/{provision,state-snapshot,observe,
inject-state,teardown}` (SI provider guide §4), each request authenticated by the API's bearer token.

The public runner sends no credential of its own, but Go's HTTP client sends the user information of a
URL as HTTP basic credentials, so `--provider-url https://runner:<token>@host:port` authenticates it:
basic credentials whose password is the token are accepted like `Authorization: Bearer <token>`.
Every refusal is a JSON body `{"status": "error", "error": ..., "field": ...}` naming what to fix.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from oasis_operator.provider_api.service import ProviderService
from oasis_operator.provider_api.wire import (
    EnvironmentBodyRef,
    InjectBody,
    ObserveBody,
    ProvisionBody,
    SnapshotBody,
    WireError,
    parse_body,
)

log = logging.getLogger(__name__)
MAX_BODY = 4 << 20
Handler = Callable[[bytes], Awaitable[dict[str, Any]]]


def presented_token(header: str) -> str | None:
    """The token a request presents: a bearer token, or the password of basic credentials."""
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return value
    if scheme.lower() == "basic" and value:
        try:
            _, _, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):
            return None
        return password or None
    return None


def _error(exc: WireError) -> web.Response:
    return web.json_response(exc.document(), status=exc.status)


class ProviderApiServer:
    """Serves one `ProviderService` on host:port with TLS; `await start()`, `await stop()`."""

    def __init__(
        self,
        service: ProviderService,
        token: str,
        cert: Path,
        key: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        ca_cert: Path | None = None,
    ) -> None:
        if not token:
            raise ValueError("the provider API needs a token (an unauthenticated API is never served)")
        self.service = service
        self.token = token
        self.cert = cert
        self.key = key
        self.host = host
        self.port = port
        self.ca_cert = ca_cert  # the CA clients trust the serving certificate by, when it is ours
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._guard])
        service = self.service

        async def teardown(raw: bytes) -> dict[str, Any]:
            return await service.teardown(parse_body(EnvironmentBodyRef, raw).environment_id)

        posts: dict[str, Handler] = {
            "provision": lambda raw: service.provision(parse_body(ProvisionBody, raw)),
            "state-snapshot": lambda raw: service.snapshot(parse_body(SnapshotBody, raw)),
            "observe": lambda raw: service.observe(parse_body(ObserveBody, raw)),
            "inject-state": lambda raw: service.inject_state(parse_body(InjectBody, raw)),
            "teardown": teardown,
        }
        app.router.add_get("/v1/conformance", self._conformance)
        for name, handler in posts.items():
            app.router.add_post(f"/v1/{name}", self._post(handler))
        return app

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Authenticate first; turn every failure into a JSON error body (never a traceback)."""
        token = presented_token(request.headers.get("Authorization", ""))
        if token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            problem = "missing or wrong credential: send Authorization: Bearer <the provider API token>"
            response = _error(WireError(401, "Authorization", problem))
            response.headers["WWW-Authenticate"] = 'Bearer realm="oasis-provider-api"'
            return response
        try:
            return await handler(request)
        except WireError as exc:
            return _error(exc)
        except web.HTTPException as exc:
            if exc.status == 405:
                problem = (
                    f"{request.method} is not served at {request.path} (conformance is GET, the rest POST)"
                )
            else:
                problem = f"no such endpoint {request.path}"
            return _error(WireError(exc.status, "", problem))
        except Exception as exc:
            log.exception("provider API request failed path=%s", request.path)
            return _error(WireError(500, "", f"the provider failed: {type(exc).__name__}: {exc}"))

    async def _conformance(self, request: web.Request) -> web.Response:
        profile = request.query.get("profile", "").strip()
        if not profile:
            raise WireError(400, "profile", "give the profile identifier as ?profile=<identifier>")
        return web.json_response(await self.service.conformance(profile))

    def _post(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def serve(request: web.Request) -> web.Response:
            try:
                raw = await request.read()
            except web.HTTPRequestEntityTooLarge:
                raise WireError(413, "", f"the body is over {MAX_BODY} bytes") from None
            return web.Response(
                text=json.dumps(await handler(raw)), content_type="application/json", status=200
            )

        return serve

    async def start(self) -> None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(self.cert), str(self.key))
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ctx)
        await site.start()
        sockets = getattr(getattr(site, "_server", None), "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        log.info("provider API listening url=%s", self.url)

    async def stop(self) -> None:
        await self.service.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
