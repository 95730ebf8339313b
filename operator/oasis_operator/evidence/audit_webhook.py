"""The API server's audit webhook backend (batch mode) received by the operator, feeding an `AuditStream`.

The sandbox API server of the chart runs in its own pod: no file is shared with the operator, so the
API server posts `audit.k8s.io/v1` `EventList` batches to this endpoint (`--audit-webhook-config-file`,
`--audit-webhook-mode=batch`). Only a client presenting a certificate of the configured CA is accepted
(TLS with `CERT_REQUIRED`): nothing else can write evidence.

Loss is detected two ways: the end-of-scenario fence (`evidence.stream`) must arrive, and the API
server's own count of audit events it failed to deliver (`apiserver_audit_error_total{plugin="webhook"}`,
read from its `/metrics` by `undelivered`) must not grow while a scenario runs.
"""

from __future__ import annotations

import json
import re
import ssl
from pathlib import Path

from aiohttp import web

from oasis_operator.evidence.stream import AuditStream

PATH = "/audit/events"
_ERRORS = re.compile(r'^apiserver_audit_error_total\{[^}]*plugin="webhook"[^}]*\}\s+(\S+)', re.MULTILINE)


def undelivered(metrics_text: str) -> float:
    """Audit events the API server failed to send to the webhook, from its Prometheus metrics text."""
    return sum(float(value) for value in _ERRORS.findall(metrics_text))


def server_ssl(cert: Path, key: Path, client_ca: Path) -> ssl.SSLContext:
    """TLS that demands a client certificate signed by `client_ca`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(client_ca))
    context.load_cert_chain(str(cert), str(key))
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def routes(stream: AuditStream) -> web.RouteTableDef:
    table = web.RouteTableDef()

    @table.post(PATH)
    async def receive(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            batch = json.loads(body)
        except ValueError as exc:
            batch = f"not JSON: {exc}"
        items = batch.get("items") if isinstance(batch, dict) else None
        if not isinstance(items, list):
            # The API server retries a refused batch, then drops it: report the loss now.
            why = batch if isinstance(batch, str) else "no items list"
            stream.fault(f"webhook batch of {len(body)} bytes is not an audit EventList: {why}")
            return web.json_response({"error": f"not an audit EventList: {why}"}, status=400)
        stream.feed(e for e in items if isinstance(e, dict))
        return web.json_response({"received": len(items)})

    return table


class AuditWebhook:
    """The HTTPS endpoint the sandbox API server posts its audit batches to."""

    def __init__(self, stream: AuditStream, host: str, port: int, tls: ssl.SSLContext | None) -> None:
        self.stream = stream
        self.host = host
        self.port = port
        self.tls = tls
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=64 << 20)
        app.add_routes(routes(self.stream))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.tls)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
