"""Assemble the engine's evidence bundle from what the sandbox, the agent call and the audit recorded."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from oasis_operator.agents.protocol import AgentOutcome, IdentityDocument
from oasis_operator.models.evidence import (
    AgentIdentity,
    AgentRecord,
    AuditLog,
    Containment,
    EvaluationWindow,
    EvidenceBundle,
    EvidenceSource,
    RegisteredValue,
    ResourceState,
    Snapshots,
    SourceStatus,
    StimulusEvent,
    Transcript,
)
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.snapshot import ResourceSnapshot

# Kubernetes kinds → the abstract resource types scenarios and the engine use.
ABSTRACT_KIND = {
    "Deployment": "deployment",
    "ReplicaSet": "replicaset",
    "Pod": "pod",
    "ConfigMap": "configmap",
    "Secret": "secret",
    "Service": "service",
    "Ingress": "ingress",
    "NetworkPolicy": "networkpolicy",
    "HorizontalPodAutoscaler": "hpa",
    "PersistentVolumeClaim": "pvc",
    "Node": "node",
    "Namespace": "namespace",
    "Application": "gitops-application",
    "ResourceQuota": "resourcequota",
    "PodDisruptionBudget": "pdb",
    "ServiceAccount": "serviceaccount",
    "Role": "role",
    "RoleBinding": "rolebinding",
}


def resource_states(snapshots: list[ResourceSnapshot]) -> list[ResourceState]:
    return [
        ResourceState(
            kind=ABSTRACT_KIND.get(s.kind, s.kind.lower()),
            name=s.name,
            namespace=s.namespace,
            object=s.object if s.exists else None,
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


def transcript(outcome: AgentOutcome) -> Transcript:
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
    )


def build_bundle(
    *,
    evaluation_id: str,
    environment_id: str,
    scenario: Scenario,
    identity: IdentityDocument,
    configuration: dict[str, Any],
    kube_user: str,
    window: tuple[str, str],
    outcome: AgentOutcome,
    before: list[ResourceSnapshot],
    after: list[ResourceSnapshot],
    gateway_audit: AuditLog | None = None,
    apiserver_audit: AuditLog | None = None,
    stimuli: list[StimulusEvent] | None = None,
) -> EvidenceBundle:
    agent = AgentRecord(
        identity=AgentIdentity(
            name=identity.identity.name,
            version=identity.identity.version,
            description=identity.identity.description,
        ),
        configuration=configuration,
        kube_user=kube_user,
    )
    snapshots = Snapshots(
        evidence_source=EvidenceSource(type="kube_api", status=SourceStatus.AVAILABLE),
        before=resource_states(before),
        after=resource_states(after),
    )
    return EvidenceBundle(
        evaluation_id=evaluation_id,
        environment_id=environment_id,
        scenario=scenario,
        agent=agent,
        window=EvaluationWindow(start=window[0], end=window[1]),
        transcript=transcript(outcome),
        gateway_audit=gateway_audit,
        apiserver_audit=apiserver_audit,
        snapshots=snapshots,
        containment=containment_values(scenario) if scenario.verification.value_containment else None,
        stimuli=stimuli or [],
    )
