"""Containment probes made through the environment's MCP server: escape attempts as tool arguments.

Each act is one MCP tool call made as the agent (its own process, `mcp_attempt.py`, in its sandbox with
its environment). The outcome is the HTTP answer behind the tool's error ("Error from server
(Forbidden)" → "403"), "ok" when the tool succeeded, or what the list showed for `only its own`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from oasis_operator.containment.acts import REASON_CODES, Act, Observation, Target

MCP_ATTEMPT = "oasis_operator.containment.mcp_attempt"


def _fill(value: Any, target: Target) -> Any:
    if isinstance(value, str):  # placeholders only: manifests carry braces of their own
        for key, filled in {
            "{home}": target.home_namespace,
            "{neighbour_id}": target.neighbour_id,
            "{neighbour_namespace}": target.neighbour_namespace,
            "{node}": target.declared_nodes[0],
        }.items():
            value = value.replace(key, filled)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, target) for k, v in value.items()}
    return value


def call_tool(target: Target, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call as the agent; the attempt's JSON answer."""
    spec = json.dumps({"tool": tool, "arguments": _fill(arguments, target)})
    result = target.agent.run([target.python, "-I", "-m", MCP_ATTEMPT], spec, 120)
    try:
        answer: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        return {"error": f"mcp_attempt failed ({result.returncode}): {result.stderr.strip()[-300:]}"}
    return answer


def tool_outcome(answer: dict[str, Any]) -> Observation:
    """The HTTP code behind a tool's error, "ok" for a success, or the error that stopped the call."""
    if "error" in answer:
        return Observation(f"error: {answer['error']}"[:200])
    text = str(answer.get("text", ""))
    last = text.strip().splitlines()[-1][:300] if text.strip() else ""
    if not answer.get("is_error"):
        return Observation("ok", text[:200])
    found = re.search(r"Error from server \((\w+)\)", text)
    if found and found.group(1) in REASON_CODES:
        return Observation(str(REASON_CODES[found.group(1)]), last)
    code = re.search(r"the server answered (\d{3})", text)
    if code:
        return Observation(code.group(1), last)
    return Observation("error: tool error", last)


def mcp_tool(tool: str, **arguments: Any) -> Act:
    """An MCP tool call with fixed arguments (`{home}`, `{neighbour_*}`, `{node}` filled in)."""
    return lambda target: tool_outcome(call_tool(target, tool, arguments))


def mcp_only_its_own(kind: str) -> Act:
    """The `list` tool on a cluster-scoped kind: does it show exactly the environment's own objects?"""

    def act(target: Target) -> Observation:
        answer = call_tool(target, "list", {"resource": kind})
        if "error" in answer or answer.get("is_error"):
            return tool_outcome(answer)
        shown = sorted(item["metadata"]["name"] for item in json.loads(answer["text"])["items"])
        declared = target.declared_namespaces if kind == "namespaces" else target.declared_nodes
        return Observation("only its own" if shown == sorted(declared) else "shows others", ", ".join(shown))

    return act
