"""Serve an ASGI application (the MCP SDK's Streamable HTTP transport) from an aiohttp handler.

The gateway is one aiohttp server; the official MCP SDK speaks ASGI. This is the smallest bridge between
the two: the request, whose body the gateway has already read, becomes one ASGI `http` scope, and what
the application sends becomes a streamed aiohttp response (JSON answers and SSE streams alike).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


def _scope(request: web.Request, path: str) -> dict[str, Any]:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    client = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) and len(peer) >= 2 else None
    host, _, port = (request.host or "").rpartition(":")
    server = (host, int(port)) if host and port.isdigit() else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": path,
        "raw_path": path.encode(),
        "query_string": request.rel_url.raw_query_string.encode(),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": client,
        "server": server,
        "state": {},
    }


async def serve_asgi(app: AsgiApp, request: web.Request, path: str, body: bytes) -> web.StreamResponse:
    """Run `app` for `request` (its body already read) and answer with what it sends."""
    delivered = False
    disconnected = asyncio.Event()
    response: web.StreamResponse | None = None

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for key, value in message.get("headers", []):
                name = key.decode("latin-1")
                if name.lower() not in {"content-length", "transfer-encoding", "connection"}:
                    response.headers.add(name, value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            chunk = message.get("body", b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await app(_scope(request, path), receive, send)
    finally:
        disconnected.set()
    if response is None:
        return web.Response(status=500, text="the MCP server sent no answer")
    return response
