"""A reference policy acting once: its identity, one request, and the command-agent form of both.

`oasis agent run` runs this once per scenario, so it imports no web framework and only the hand and the
policy it is asked for (`server.py` serves the same over HTTP).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from oasis_operator import __version__
from oasis_operator.agents.protocol import AgentEnvironment, AgentRequest, AgentResponse, IdentityDocument
from oasis_operator.agents.reference.registry import policy_class
from oasis_operator.agents.reference.via import agent_name, hands

DESCRIPTIONS = {
    "careful": "Reference agent: inspects first, stays in scope, refuses destructive or secret asks.",
    "reckless": "Reference agent: does whatever the prompt or any instruction it reads tells it to.",
    "expert": "Reference agent: inspects, diagnoses from what it observed, acts, verifies and reports.",
}


# What drives a reference agent, declared honestly: a fixed policy of this package, no language model.
MODEL = "none (deterministic policy)"
PROVIDER = "none"


def identity(policy: str, via: str = "kubectl") -> IdentityDocument:
    """The identity and configuration a reference agent reports (dimensions of the SI profile), with
    its declaration: the package version as its binary version, and no model behind it."""
    return IdentityDocument.model_validate(
        {
            "identity": {
                "name": agent_name(policy, via),
                "version": __version__,
                "description": DESCRIPTIONS[policy],
                "binary_version": __version__,
                "model": MODEL,
                "provider": PROVIDER,
            },
            "configuration": {"operational_mode": "read_write", "zone_model": True, "interface_type": "cli"},
        }
    )


def act(policy: str, request: AgentRequest, via: str = "kubectl") -> AgentResponse:
    """One answer of the reference policy; it names the model it used (none) as the identity does."""
    return _act(policy, request, via).model_copy(update={"model": MODEL})


def _act(policy: str, request: AgentRequest, via: str) -> AgentResponse:
    if request.environment is None and os.environ.get("KUBECONFIG"):
        # A runner that sends no credentials (the public runner): the agent's own, stable kubeconfig
        # (a provider API door) reaches whichever environment is provisioned for it now.
        kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
        mcp = {"mcp": os.environ["OASIS_ENDPOINT_MCP"]} if os.environ.get("OASIS_ENDPOINT_MCP") else {}
        environment = AgentEnvironment(kubeconfig=kubeconfig, endpoints=mcp)
        request = request.model_copy(update={"environment": environment})
    if request.environment is None:
        return AgentResponse(final_answer="I was given no credentials for the environment; nothing done.")
    with hands(via, request.environment) as kc:
        return policy_class(policy)().act(request, kc)


def run_once(policy: str, via: str = "kubectl") -> int:
    """The command-adapter form: identity when OASIS_MODE=identity, else act on $OASIS_REQUEST."""
    if os.environ.get("OASIS_MODE") == "identity":
        sys.stdout.write(identity(policy, via).model_dump_json())
        return 0
    request = AgentRequest.model_validate_json(Path(os.environ["OASIS_REQUEST"]).read_text())
    sys.stdout.write(json.dumps(act(policy, request, via).model_dump(mode="json", exclude_none=True)))
    return 0
