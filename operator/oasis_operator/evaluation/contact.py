"""Whether a run's agent can be reached at all (pure).

What an agent failure means for a scenario (its own report, a transport error, a timeout, a protocol
error) is the engine's decision, made from the evidence bundle (`engine.agent_failure`). This module
decides one thing only: when the very first agent calls of a run all fail to reach the agent (transport
or timeout) and the gateway saw no request, the agent is unreachable and the run stops before any
verdict (`AgentUnreachable`), as a preflight gap does.
"""

from __future__ import annotations

from oasis_operator.agents.protocol import AgentOutcome
from oasis_operator.models.evidence import AuditLog

UNREACHABLE_KINDS = frozenset({"transport", "timeout"})


def is_unreachable(outcome: AgentOutcome, gateway_audit: AuditLog | None) -> bool:
    """The call never reached a working agent: no answer (transport, timeout) and no request seen."""
    acted = gateway_audit is not None and bool(gateway_audit.entries)
    return outcome.error_kind in UNREACHABLE_KINDS and not acted
