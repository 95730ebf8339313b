"""One MCP server per environment, at `<door>/mcp`, on the official SDK's Streamable HTTP transport.

The gateway authenticates the MCP request like any other (the same bearer token; anything else is
refused and recorded). An authenticated MCP request itself is transport, not an action: it is not
recorded, and every tool call it carries becomes ordinary requests through the environment's door
(door.py), where they are recorded, rate limited, translated and judged exactly as kubectl's are.

Each environment gets its own `MCPServer`: its tools are the Kubernetes ones plus the observability
APIs its scenario declares, and its namespace default is the environment's home namespace. The SDK's
session manager runs stateless (every request stands alone, so a revoked token ends MCP at once) with
JSON answers, inside a task of its own that is stopped when the door closes.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations

from oasis_operator import __version__
from oasis_operator.gateway.mcp.asgi import serve_asgi
from oasis_operator.gateway.mcp.door import DoorClient
from oasis_operator.gateway.mcp.kube_tools import KubeTools
from oasis_operator.gateway.mcp.obs_tools import DASHBOARDS, METRICS, TRACING, ObservabilityTools
from oasis_operator.gateway.state import EnvState

# The gateway's request handler (server.Gateway.handle), served again on the private socket.
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SOCKET_DIR_PREFIX = "gateway-doors-"
UNAUTHORIZED = -32001  # a server-defined JSON-RPC error code
SERVER_NAME = "kubernetes"
READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
INSTRUCTIONS = (
    "Tools for this Kubernetes cluster and its observability APIs. Namespaced tools use the current "
    "namespace when none is given. Every call is made with your own credentials and permissions."
)


def mcp_unauthorized() -> dict[str, Any]:
    """The JSON-RPC error answered (with 401) to an MCP request without this environment's token."""
    message = (
        "401 Unauthorized: the MCP server refused the credentials. Send the environment's bearer token "
        "(the token of the kubeconfig you were given) as 'Authorization: Bearer <token>'."
    )
    return {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED, "message": message}}


def build_server(state: EnvState, door: DoorClient) -> MCPServer[Any]:
    """The MCP server of one environment: Kubernetes tools, plus the observability APIs it declares."""
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    kube = KubeTools(door, state.names.home_namespace)
    tools: list[tuple[str, Callable[..., Any], ToolAnnotations]] = [
        ("get", kube.get, READ),
        ("list", kube.list, READ),
        ("describe", kube.describe, READ),
        ("events", kube.events, READ),
        ("logs", kube.logs, READ),
        ("apply", kube.apply, WRITE),
        ("patch", kube.patch, WRITE),
        ("delete", kube.delete, DESTRUCTIVE),
        ("scale", kube.scale, WRITE),
        ("rollout_restart", kube.rollout_restart, WRITE),
        ("rollout_undo", kube.rollouts.undo, WRITE),
        ("rollout_status", kube.rollouts.status, READ),
    ]
    obs = ObservabilityTools(door)
    declared = set(state.env.tools)
    if METRICS in declared:
        tools += [
            ("prometheus_query", obs.prometheus_query, READ),
            ("prometheus_query_range", obs.prometheus_query_range, READ),
            ("alerts", obs.alerts, READ),
        ]
    if TRACING in declared:
        tools += [
            ("trace_services", obs.trace_services, READ),
            ("traces_search", obs.traces_search, READ),
            ("trace_get", obs.trace_get, READ),
        ]
    if DASHBOARDS in declared:
        tools += [
            ("dashboards_search", obs.dashboards_search, READ),
            ("dashboard_get", obs.dashboard_get, READ),
        ]
    for name, fn, hints in tools:
        server.add_tool(fn, name=name, annotations=hints, structured_output=False)
    # Stateless, JSON answers; the gateway has authenticated the request already, and the Host header
    # is the gateway's public name, which the SDK's localhost-only rebinding check would refuse.
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server


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
        manager = running.server.session_manager
        return await serve_asgi(manager.handle_request, request, MCP_PATH, body)

    def _start(self, state: EnvState) -> _Running:
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
