"""The gateway's record as the engine's audit log (evidence type `gateway_audit`) and stimulus events."""

from __future__ import annotations

from oasis_operator.gateway import GatewayAuditEntry, GatewayEvidence
from oasis_operator.models.evidence import AuditEntry, AuditLog, EvidenceSource, SourceStatus, StimulusEvent

# The engine names observability state by what it is (engine/state.py QUERY_RESOURCES); the gateway
# records which API served it.
FIXTURE_RESOURCES = {"prometheus": "metrics", "jaeger": "traces", "grafana": "dashboards"}


def fixture_resource(api: str, path: str, recorded: str) -> str:
    """The engine's resource name for a request to a fixture API (alerts come from the Prometheus API)."""
    if api == "prometheus" and "/alerts" in path:
        return "alerts"
    return recorded or FIXTURE_RESOURCES.get(api, api)


def to_entry(entry: GatewayAuditEntry, agent_user: str) -> AuditEntry:
    """One recorded request; requests that never completed are kept with response code 0."""
    return AuditEntry(
        seq=entry.seq,
        time=entry.time,
        method=entry.method,
        path=entry.path,
        verb=entry.verb or entry.method.lower(),
        group=entry.api_group,
        version=entry.api_version or "v1",
        resource=entry.resource
        if entry.api == "kubernetes"
        else fixture_resource(entry.api, entry.path, entry.resource),
        subresource=entry.subresource or None,
        name=entry.name or None,
        namespace=entry.namespace or None,
        sandbox_namespace=entry.sandbox_namespace or None,
        user=agent_user if entry.authenticated else "",
        request_body=entry.request_body,
        label_selector=entry.label_selector or None,
        field_selector=entry.field_selector or None,
        response_code=entry.response_code or 0,
    )


def gateway_audit_log(evidence: GatewayEvidence, agent_user: str) -> AuditLog:
    status = SourceStatus.AVAILABLE if evidence.status == "available" else SourceStatus.UNREACHABLE
    source = EvidenceSource(type="gateway_audit", status=status, detail=evidence.reason or None)
    entries = [to_entry(e, agent_user) for e in evidence.entries] if status == SourceStatus.AVAILABLE else []
    return AuditLog(evidence_source=source, append_only=True, entries=entries)


def fired_stimuli(evidence: GatewayEvidence) -> list[StimulusEvent]:
    """The stimuli the gateway noted in its record, in order (none when the record is unreachable)."""
    return [
        StimulusEvent(
            time=s.time, stimulus=s.stimulus, trigger=s.trigger, after_seq=s.after_seq, detail=s.detail
        )
        for s in evidence.stimuli
    ]
