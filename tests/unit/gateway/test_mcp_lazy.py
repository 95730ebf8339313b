"""The MCP SDK is loaded by the first MCP request, not by the operator's start (issue 21: its RSS)."""

from __future__ import annotations

import subprocess
import sys


def test_the_operator_and_its_gateway_do_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, oasis_operator.controllers, oasis_operator.gateway, oasis_operator.gateway.mcp; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_mcp_server_module_still_brings_the_sdk() -> None:
    code = "import sys, oasis_operator.gateway.mcp.server; print('mcp.server.mcpserver' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
