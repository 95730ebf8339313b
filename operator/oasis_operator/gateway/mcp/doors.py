"""The gateway's MCP doors: where each environment's MCP server is started, answered and stopped.

This module does not import the MCP SDK: the first MCP request of an environment does (server.py), so
an operator whose agents never speak MCP does not carry it.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from oasis_operator.gateway.state import EnvState

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from oasis_operator.gateway.mcp.door import DoorClient

# The gateway's request handler (server.Gateway.handle), served again on the private socket.
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SOCKET_DIR_PREFIX = "gateway-doors-"
UNAUTHORIZED = -32001  # a server-defined JSON-RPC error code


def mcp_unauthorized() -> dict[str, Any]:
    """The JSON-RPC error answered (with 401) to an MCP request without this environment's token."""
    message = (
        "401 Unauthorized: the MCP server refused the credentials. Send the environment's bearer token "
        "(the token of the kubeconfig you were given) as 'Authorization: Bearer <token>'."
    )
    return {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED, "message": message}}


@dataclass
class _Running:
    server: MCPServer[Any]
    door: DoorClient
    task: asyncio.Task[None]
    ready: asyncio.Event
    stop: asyncio.Event


class McpDoors:
    """The MCP servers of a gateway's environments, started at their first request."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._socket: Path | None = None
        self._running: dict[str, _Running] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._site_runner: web.AppRunner | None = None

    @property
    def socket_path(self) -> Path:
        """The private listener's socket (its directory is made when first asked, at gateway start)."""
        if self._socket is None:
            self._socket = private_socket(self._data_dir)
        return self._socket

    async def serve_socket(self, doors: Handler, max_body_bytes: int) -> None:
        """Serve the gateway's doors (`doors`, its request handler) on the private socket, reachable by
        this process only: where tool calls come back in as the agent's own requests."""
        app = web.Application(client_max_size=max_body_bytes)
        app.router.add_route("*", "/{path:.*}", doors)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=False, shutdown_timeout=2.0)
        await runner.setup()
        await web.UnixSite(runner, str(self.socket_path)).start()
        self.socket_path.chmod(0o600)
        self._site_runner = runner

    async def handle(self, request: web.Request, state: EnvState, body: bytes) -> web.StreamResponse:
        """Answer one authenticated MCP request of `state`'s environment."""
        running = self._running.get(state.env.id)
        if running is None or running.task.done():
            running = self._start(state)
        await running.ready.wait()
        if running.task.done():
            return web.json_response({"error": "the MCP server of this environment stopped"}, status=503)
        from oasis_operator.gateway.mcp.asgi import serve_asgi  # noqa: PLC0415

        manager = running.server.session_manager
        return await serve_asgi(manager.handle_request, request, MCP_PATH, body)

    def _start(self, state: EnvState) -> _Running:
        # The SDK is imported by the first MCP request: most agents never send one, and it costs the
        # operator ~28 MiB of RSS (bench/results/memory_growth.md).
        from oasis_operator.gateway.mcp.door import DoorClient  # noqa: PLC0415
        from oasis_operator.gateway.mcp.server import build_server  # noqa: PLC0415

        door = DoorClient(self.socket_path, f"/env/{state.env.id}", state.token)
        server = build_server(state, door)
        ready, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            try:
                async with server.session_manager.run():
                    ready.set()
                    await stop.wait()
            finally:
                ready.set()
                await door.close()

        task = asyncio.create_task(run(), name=f"mcp-{state.env.id}")
        running = _Running(server, door, task, ready, stop)
        self._running[state.env.id] = running
        return running

    def closing(self, env_id: str) -> None:
        """Stop an environment's MCP server soon (called when its token is revoked)."""
        if env_id not in self._running:
            return
        try:
            task = asyncio.get_running_loop().create_task(self.close(env_id))
        except RuntimeError:  # no loop here: stop() ends it with the gateway
            return
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self, env_id: str) -> None:
        """Stop one environment's MCP server."""
        running = self._running.pop(env_id, None)
        if running is None:
            return
        running.stop.set()
        done, _ = await asyncio.wait({running.task}, timeout=5)
        if not done:
            running.task.cancel()
        elif running.task.exception() is not None:
            log.warning("MCP server of env=%s ended with %r", env_id, running.task.exception())

    async def stop(self) -> None:
        """Stop every MCP server and remove the private socket's directory if it is one of ours."""
        for env_id in list(self._running):
            await self.close(env_id)
        if self._site_runner is not None:
            await self._site_runner.cleanup()
            self._site_runner = None
        if self._socket is not None and self._socket.parent.name.startswith(SOCKET_DIR_PREFIX):
            shutil.rmtree(self._socket.parent, ignore_errors=True)
        self._socket = None


def private_socket(data_dir: Path) -> Path:
    """Where the gateway's private listener is: in its 0700 data directory, or a short private
    directory when that path is too long for a Unix socket (108 bytes on Linux)."""
    path = data_dir / "doors.sock"
    if len(str(path)) < 100:
        return path
    return Path(tempfile.mkdtemp(prefix=SOCKET_DIR_PREFIX)) / "doors.sock"
