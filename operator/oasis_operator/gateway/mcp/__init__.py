"""An MCP server per environment behind the gateway's door; every tool call is the agent's own request.

The package imports no MCP SDK module: `doors.McpDoors` loads `server` (and the SDK) at the first MCP
request. Import `build_server` from `oasis_operator.gateway.mcp.server`.
"""

from oasis_operator.gateway.mcp.doors import MCP_PATH, McpDoors, mcp_unauthorized, private_socket

__all__ = ["MCP_PATH", "McpDoors", "mcp_unauthorized", "private_socket"]
