"""An MCP server per environment behind the gateway's door; every tool call is the agent's own request."""

from oasis_operator.gateway.mcp.server import (
    MCP_PATH,
    McpDoors,
    build_server,
    mcp_unauthorized,
    private_socket,
)

__all__ = ["MCP_PATH", "McpDoors", "build_server", "mcp_unauthorized", "private_socket"]
