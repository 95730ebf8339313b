"""A reference agent's hands: kubectl with its kubeconfig, or only the environment's MCP tools."""

from __future__ import annotations

from oasis_operator.agents.protocol import AgentEnvironment
from oasis_operator.agents.reference.kubectl import Kubectl

HANDS = ("kubectl", "mcp")


def agent_name(policy: str, via: str) -> str:
    """`reference-careful`, or `reference-careful-mcp` for the same policy acting only over MCP."""
    return f"reference-{policy}" + ("" if via == "kubectl" else f"-{via}")


def hands(via: str, environment: AgentEnvironment) -> Kubectl:
    """The kubectl a policy acts with (a context manager): real kubectl, or kubectl spoken over MCP."""
    if via == "kubectl":
        return Kubectl(environment.kubeconfig)
    if via == "mcp":
        # The MCP SDK only for the hand that speaks it: kubectl hands start without it.
        from oasis_operator.agents.reference.mcp_kubectl import McpKubectl  # noqa: PLC0415

        url = environment.endpoints.get("mcp")
        if not url:
            raise ValueError("the request gives no MCP endpoint (environment.endpoints.mcp)")
        return McpKubectl(environment.kubeconfig, url)
    raise ValueError(f"unknown way to act {via!r}: one of {', '.join(HANDS)}")
