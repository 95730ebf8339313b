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

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations

from oasis_operator import __version__
from oasis_operator.gateway.mcp.door import DoorClient
from oasis_operator.gateway.mcp.kube_tools import KubeTools
from oasis_operator.gateway.mcp.obs_tools import DASHBOARDS, METRICS, TRACING, ObservabilityTools
from oasis_operator.gateway.state import EnvState

SERVER_NAME = "kubernetes"
READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
INSTRUCTIONS = (
    "Tools for this Kubernetes cluster and its observability APIs. Namespaced tools use the current "
    "namespace when none is given. Every call is made with your own credentials and permissions."
)


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
