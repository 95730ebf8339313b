"""The agent side of an MCP containment probe: one tool call, as the agent's own process.

Runs as `python -m oasis_operator.containment.mcp_attempt < spec.json` in the agent's sandbox and
environment: the MCP server's URL from `OASIS_ENDPOINT_MCP`, the token and CA from the agent's
`KUBECONFIG`, nothing else. Prints `{"is_error", "text"}` of the tool's answer, or `{"error"}` when no
MCP session could be opened.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from oasis_operator.agents.reference.mcp_client import McpConnectError, McpConnection, credentials_from

TEXT_KEPT = 1 << 20


def main() -> int:
    spec = json.load(sys.stdin)
    try:
        creds = credentials_from(Path(os.environ["KUBECONFIG"]).read_text(), os.environ["OASIS_ENDPOINT_MCP"])
        with McpConnection(creds) as mcp:
            answer = mcp.call(str(spec["tool"]), dict(spec.get("arguments") or {}))
    except (McpConnectError, KeyError, OSError, ValueError) as exc:
        sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 0
    sys.stdout.write(json.dumps({"is_error": answer.is_error, "text": answer.text[:TEXT_KEPT]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
