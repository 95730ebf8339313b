"""Assemble the engine's evidence bundle from what the sandbox, the agent call and the audit recorded.

Imports only `models`: the sandbox's snapshots and the agent adapter's outcome are read through the
small protocols below, and the two audit records arrive already as `AuditLog` (the gateway's reader and
`evidence.stream` produce them).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from oasis_operator.models.agent_failure import AgentFailure, AgentFailureSource
from oasis_operator.models.evidence import (
    AgentRecord,
    AuditLog,
    Conclusion,
    Containment,
    DiscardedSignal,
    EvaluationWindow,
    EvidenceBundle,
    EvidenceSource,
    FieldManager,
    RegisteredValue,
    ResourceState,
    Snapshots,
    SourceStatus,
    StimulusEvent,
    ToolAction,
    TrailEntry,
    Transcript,
)
from oasis_operator.models.kinds import KIND_TYPES
from oasis_operator.models.scenario import Scenario


class Snapshot(Protocol):
    """One resource at one moment, as the sandbox snapshots it (`sandbox.snapshot.ResourceSnapshot`)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str | None: ...
    @property
    def exists(self) -> bool: ...
    @property
    def object(self) -> dict[str, Any] | None: ...
    @property
    def managers(self) -> Sequence[FieldManager]: ...


class ReportedAction(Protocol):
    def to_tool_action(self) -> ToolAction: ...


class AgentReply(Protocol):
    @property
    def actions(self) -> Sequence[ReportedAction]: ...
    @property
    def reasoning(self) -> str | None: ...
    @property
    def final_answer(self) -> str | None: ...
    @property
    def conclusion(self) -> Any: ...
    @property
    def audit_trail(self) -> Sequence[Any]: ...
    @property
    def agent_failure(self) -> Any: ...
    @property
    def model(self) -> str | None: ...


class AgentCall(Protocol):
    """What one agent call produced (`agents.protocol.AgentOutcome`)."""

    @property
    def response(self) -> AgentReply | None: ...
    @property
    def error_kind(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


@dataclass(frozen=True)
class RunFacts:
    """What ran: the evaluation, the environment, the scenario, the agent and the observation window."""

    evaluation_id: str
    environment_id: str
    scenario: Scenario
    agent: AgentRecord
    window: EvaluationWindow


@dataclass(frozen=True)
class Records:
    """What the independent recorders kept: gateway record, API-server audit, stimuli applied."""

    gateway_audit: AuditLog | None = None
    apiserver_audit: AuditLog | None = None
    stimuli: list[StimulusEvent] = field(default_factory=list)


def resource_states(snapshots: Sequence[Snapshot]) -> list[ResourceState]:
    return [
        ResourceState(
            kind=KIND_TYPES.get(s.kind, s.kind.lower()),
            name=s.name,
            namespace=s.namespace,
            object=s.object if s.exists else None,
            managers=list(s.managers) if s.exists else [],
        )
        for s in snapshots
    ]


def _plain(value: Any) -> str:
    text = str(value)
    try:
        decoded = base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return text
    return decoded if decoded.isprintable() and base64.b64encode(decoded.encode()).decode() == text else text


def containment_values(scenario: Scenario) -> Containment:
    """Resolve every `value_ref` against the declared state, to the literal (decoded) value."""
    values = []
    for entry in scenario.verification.value_containment:
        resource, _, path = entry.value_ref.partition(".")
        declared = next((s for s in scenario.preconditions.environment.state if s.resource == resource), None)
        node: Any = dict(declared.model_extra or {}) if declared else None
        for part in path.split(".") if path else []:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return Containment(
                evidence_source=EvidenceSource(
                    type="containment",
                    status=SourceStatus.UNREACHABLE,
                    detail=f"{entry.value_ref} does not resolve in the preconditions",
                ),
            )
        values.append(RegisteredValue(value_ref=entry.value_ref, value=_plain(node), scope=entry.scope))
    return Containment(
        evidence_source=EvidenceSource(type="containment", status=SourceStatus.AVAILABLE), values=values
    )


def transcript(outcome: AgentCall) -> Transcript:
    """The agent's side: what it said and did. Agent errors are not source faults (the capture worked)."""
    response = outcome.response
    source = EvidenceSource(
        type="agent_transcript",
        status=SourceStatus.AVAILABLE,
        detail=f"agent {outcome.error_kind}: {outcome.error}" if outcome.error_kind else None,
    )
    if response is None:
        return Transcript(evidence_source=source)
    return Transcript(
        evidence_source=source,
        actions=[a.to_tool_action() for a in response.actions],
        reasoning=response.reasoning,
        final_answer=response.final_answer,
        conclusion=_conclusion(response.conclusion),
        model=response.model,
        audit_trail=_trail(response.audit_trail),
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _trail(steps: Sequence[Any]) -> list[TrailEntry]:
    """The trail given in the answer as the engine reads it (steps naming no operation dropped)."""
    out: list[TrailEntry] = []
    for given in steps:
        extra = given.model_extra or {}
        operation = _text(given.operation if given.operation is not None else extra.get("command"))
        if not operation:
            continue
        step = given.step if isinstance(given.step, int) and not isinstance(given.step, bool) else None
        reason = given.reason if given.reason is not None else extra.get("reasoning")
        out.append(
            TrailEntry(
                step=step,
                operation=operation,
                reason=_text(reason),
                trigger=_text(given.trigger),
                before=given.before,
                after=given.after,
            )
        )
    return out


def agent_failure(outcome: AgentCall, gateway_audit: AuditLog | None = None) -> AgentFailure | None:
    """The run's agent failure as the engine reads it: a failed call (its kind and error), else the
    report the agent put in its answer, else its actions that never reached the door (`unreached`),
    else None (an answer without a report is judged as usual)."""
    if outcome.error_kind:
        cause = outcome.error or f"the agent call failed ({outcome.error_kind})"
        return AgentFailure(cause=cause, source=AgentFailureSource(outcome.error_kind))
    report = outcome.response.agent_failure if outcome.response is not None else None
    if report is not None:
        return AgentFailure(cause=report.cause, source=AgentFailureSource.AGENT)
    return unreached(outcome, gateway_audit)


def unreached(outcome: AgentCall, gateway_audit: AuditLog | None) -> AgentFailure | None:
    """The agent could not act: it reported actions, every one failed, and its door (the gateway, whose
    record is complete for the window) saw no request at all: its calls never reached the sandbox (a
    door it could not open: an unreachable gateway, a wrong kubeconfig). Doing nothing is judged as
    usual; being unable to do anything is not a PASS. Never raised without a gateway record to read."""
    if outcome.response is None or gateway_audit is None or gateway_audit.entries:
        return None
    if gateway_audit.evidence_source.status is not SourceStatus.AVAILABLE:
        return None
    actions = [action.to_tool_action() for action in outcome.response.actions]
    if not actions or any(not action.error for action in actions):
        return None
    return AgentFailure(
        cause=f"the agent reported {len(actions)} action(s), every one failed, and its door recorded no "
        "request: its calls never reached the sandbox",
        source=AgentFailureSource.UNREACHED,
    )


def _conclusion(given: Any) -> Conclusion | None:
    """The agent's structured conclusion as the engine reads it (signals without a name dropped)."""
    if given is None:
        return None
    discarded = [
        DiscardedSignal(signal=str(d.get("signal")), rationale=str(d.get("rationale") or ""))
        for d in given.discarded
        if d.get("signal")
    ]
    return Conclusion(root_cause=given.root_cause, evidence=list(given.evidence), discarded=discarded)


def build_bundle(
    run: RunFacts,
    outcome: AgentCall,
    before: Sequence[Snapshot],
    after: Sequence[Snapshot],
    records: Records,
) -> EvidenceBundle:
    """The bundle the engine judges: what ran, what the agent said, what changed, what was recorded."""
    snapshots = Snapshots(
        evidence_source=EvidenceSource(type="kube_api", status=SourceStatus.AVAILABLE),
        before=resource_states(before),
        after=resource_states(after),
    )
    scenario = run.scenario
    return EvidenceBundle(
        evaluation_id=run.evaluation_id,
        environment_id=run.environment_id,
        scenario=scenario,
        agent=run.agent,
        window=run.window,
        transcript=transcript(outcome),
        gateway_audit=records.gateway_audit,
        apiserver_audit=records.apiserver_audit,
        snapshots=snapshots,
        containment=containment_values(scenario) if scenario.verification.value_containment else None,
        stimuli=list(records.stimuli),
        agent_failure=agent_failure(outcome, records.gateway_audit),
    )
