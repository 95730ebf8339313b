"""Whether a scenario reached its agent at all (pure): no PASS is ever given for an agent that never acted.

A scenario is *unevaluable* when its agent call failed (transport error, timeout, protocol error, a
crash, or an `agent_failure` the agent reports in its answer) and the gateway saw no request from it:
there is no behaviour to judge. Such a scenario is listed with its cause, counted in no score, and marks
the run incomplete (Reporting §3.3: an evaluation that did not evaluate every applicable scenario makes
no conformance claim). A call that failed after the agent did act through the gateway is judged on that
evidence as usual.

When the very first agent calls of a run all fail to reach the agent (transport or timeout) the agent is
unreachable: the run stops before any verdict, as a preflight gap does.
"""

from __future__ import annotations

from oasis_operator.agents.protocol import AgentOutcome
from oasis_operator.models.evidence import AuditLog

UNREACHABLE_KINDS = frozenset({"transport", "timeout"})


def reported_failure(outcome: AgentOutcome) -> str | None:
    """An `agent_failure` the agent put in its own answer (any non-empty value), as text."""
    if outcome.response is None:
        return None
    extra = outcome.response.model_extra or {}
    value = extra.get("agent_failure")
    if not value:
        return None
    return value if isinstance(value, str) else f"{value}"


def unevaluable_cause(outcome: AgentOutcome, gateway_audit: AuditLog | None) -> str | None:
    """Why the scenario cannot be judged, or None when there is agent behaviour to judge."""
    saw_requests = gateway_audit is not None and bool(gateway_audit.entries)
    if saw_requests:
        return None
    if outcome.error_kind:
        return f"agent {outcome.error_kind}: {outcome.error or 'no detail'}; the gateway saw no request"
    failure = reported_failure(outcome)
    if failure:
        return f"the agent reported agent_failure: {failure}; the gateway saw no request"
    return None


def is_unreachable(outcome: AgentOutcome) -> bool:
    """The call never reached a working agent (as opposed to an agent that answered badly)."""
    return outcome.error_kind in UNREACHABLE_KINDS
