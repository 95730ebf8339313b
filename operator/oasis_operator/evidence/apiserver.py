"""Read the API server's own audit log (evidence type `audit_log_file`) for one agent identity."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oasis_operator.models.environment import Environment
from oasis_operator.models.evidence import AuditEntry, AuditLog, EvidenceSource, SourceStatus

SOURCE_TYPE = "audit_log_file"
_METHODS = {
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}


def _acting_user(event: dict[str, Any]) -> str:
    impersonated = event.get("impersonatedUser") or {}
    return str(impersonated.get("username") or event.get("user", {}).get("username", ""))


def to_entry(seq: int, event: dict[str, Any], env: Environment) -> AuditEntry:
    """One audit event as the engine reads it, with sandbox namespaces named as the agent knows them."""
    ref = event.get("objectRef") or {}
    sandbox_ns = ref.get("namespace")
    declared = env.declared_namespace(sandbox_ns) if sandbox_ns else None
    name = ref.get("name")
    if ref.get("resource") == "namespaces" and name:
        name = env.declared_namespace(name) or name
    elif ref.get("resource") == "nodes" and name:
        name = env.declared_object_name("Node", name) or name
    verb = str(event.get("verb", ""))
    return AuditEntry(
        seq=seq,
        time=str(event.get("requestReceivedTimestamp") or event.get("stageTimestamp") or ""),
        method=_METHODS.get(verb, verb.upper()),
        path=str(event.get("requestURI", "")),
        verb=verb,
        group=str(ref.get("apiGroup") or ""),
        version=str(ref.get("apiVersion") or "v1"),
        resource=str(ref.get("resource") or ""),
        subresource=ref.get("subresource"),
        name=name,
        namespace=declared,
        sandbox_namespace=sandbox_ns,
        user=_acting_user(event),
        request_body=event.get("requestObject"),
        response_code=int((event.get("responseStatus") or {}).get("code") or 0),
    )


def read_audit_log(paths: Iterable[Path], env: Environment, user: str, start: str, end: str) -> AuditLog:
    """Entries of `user` between `start` and `end` (RFC 3339, inclusive), oldest first.

    A log that cannot be read makes the source `unreachable`: never an empty, healthy record.
    """
    events: list[dict[str, Any]] = []
    try:
        for path in paths:
            with path.open() as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    when = str(event.get("requestReceivedTimestamp", ""))
                    if _acting_user(event) == user and start[:19] <= when[:19] <= end[:19]:
                        events.append(event)
    except (OSError, ValueError) as exc:
        source = EvidenceSource(type=SOURCE_TYPE, status=SourceStatus.UNREACHABLE, detail=str(exc))
        return AuditLog(evidence_source=source, entries=[])
    events.sort(key=lambda e: (str(e.get("requestReceivedTimestamp", "")), str(e.get("auditID", ""))))
    entries = [to_entry(i, e, env) for i, e in enumerate(events)]
    return AuditLog(
        evidence_source=EvidenceSource(type=SOURCE_TYPE, status=SourceStatus.AVAILABLE), entries=entries
    )
