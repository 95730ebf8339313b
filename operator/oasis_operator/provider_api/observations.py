"""`/v1/observe` answers built from the evidence the operator already holds (pure functions).

- `audit_log`: the gateway's record of the environment (the agent's only door), every entry kept and
  annotated, never narrowed: a request made with the agent's credential carries the agent's principal
  as `user`, anything else (a foreign or missing credential) its own attribution. `agent_principal`
  says which is the agent. Optional filters: `time_from`, `time_to`, `namespace`, `resource_type`, `verb`.
- `resource_state`: live state of the declared resources (all of them, or the one named by `kind`,
  `name`, `namespace`).
- `state_diff`: the provisioning snapshot against the live one, field by field (sandbox bookkeeping and
  status normalised away, as the engine compares them).

A record the gateway cannot vouch for is `evidence_source.status: unreachable`, with the cause, and no
entries: an empty answer is only ever an empty, healthy record.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from oasis_operator.models.evidence import Actor, AuditEntry
from oasis_operator.provider_api.wire import WireError
from oasis_operator.sandbox.snapshot import ResourceSnapshot, diff

GATEWAY_SOURCE = "gateway_audit"
KUBE_SOURCE = "kube_api"


def source(kind: str, available: bool, detail: str | None = None) -> dict[str, Any]:
    """The `evidence_source` block (Reporting §1.1)."""
    out: dict[str, Any] = {"type": kind, "status": "available" if available else "unreachable"}
    if detail:
        out["detail"] = detail
    return out


def _instant(text: Any, field: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise WireError(400, field, f"{text!r} is not an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _body_text(body: Any) -> str:
    if body is None:
        return ""
    return body if isinstance(body, str) else json.dumps(body, sort_keys=True)


def wire_entry(entry: AuditEntry, principal: str) -> dict[str, Any]:
    """One recorded request in the guide's entry shape (plus name, subresource and response code)."""
    user = principal if entry.actor == Actor.AGENT else (entry.user or f"{entry.actor.value}")
    if entry.actor != Actor.AGENT and entry.credential:
        user = f"{entry.actor.value}:{entry.credential}"
    out: dict[str, Any] = {
        "timestamp": entry.time,
        "verb": entry.verb,
        "resource": entry.resource,
        "namespace": entry.namespace or "",
        "user": user,
        "request_body": _body_text(entry.request_body),
        "response_code": entry.response_code,
    }
    if entry.name:
        out["name"] = entry.name
    if entry.subresource:
        out["subresource"] = entry.subresource
    return out


def audit_log(entries: list[AuditEntry], principal: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The `data` of an audit_log observation, filtered by the optional parameters."""
    start = _instant(parameters["time_from"], "parameters.time_from") if "time_from" in parameters else None
    end = _instant(parameters["time_to"], "parameters.time_to") if "time_to" in parameters else None
    namespace = parameters.get("namespace") or None
    resource = str(parameters.get("resource_type") or "").lower() or None
    verb = str(parameters.get("verb") or "").lower() or None
    kept = []
    for entry in entries:
        when = _instant(entry.time, "time")
        if (start and when < start) or (end and when > end):
            continue
        if namespace and entry.namespace != namespace:
            continue
        if resource and entry.resource not in {resource, resource + "s"}:
            continue
        if verb and entry.verb != verb:
            continue
        kept.append(wire_entry(entry, principal))
    return {"entries": kept, "agent_principal": principal}


def wire_resource(snapshot: ResourceSnapshot) -> dict[str, Any]:
    """A resource as the guide shows it: kind, name, namespace, spec and status (and whether it exists)."""
    obj = snapshot.object or {}
    out: dict[str, Any] = {"kind": snapshot.kind, "name": snapshot.name, "exists": snapshot.exists}
    if snapshot.namespace:
        out["namespace"] = snapshot.namespace
    for key in ("spec", "status", "data", "metadata"):
        if key in obj:
            out[key] = obj[key]
    return out


def select_resources(snapshots: list[ResourceSnapshot], parameters: dict[str, Any]) -> list[ResourceSnapshot]:
    """The snapshots `kind`/`name`/`namespace` name (all of them when neither kind nor name is given)."""
    kind = str(parameters.get("kind") or "").lower()
    name = str(parameters.get("name") or "")
    namespace = parameters.get("namespace") or None
    if not kind and not name:
        return snapshots
    if not kind or not name:
        missing = "kind" if not kind else "name"
        raise WireError(400, f"parameters.{missing}", "give both kind and name, or neither (all resources)")
    chosen = [
        s
        for s in snapshots
        if s.kind.lower() == kind and s.name == name and (namespace is None or s.namespace == namespace)
    ]
    if not chosen:
        where = f" in namespace {namespace}" if namespace else ""
        raise WireError(404, "parameters", f"no declared resource {kind}/{name}{where} in this environment")
    return chosen


def resource_state(snapshots: list[ResourceSnapshot], parameters: dict[str, Any]) -> dict[str, Any]:
    """The `data` of a resource_state observation: one resource when named, else every one."""
    chosen = select_resources(snapshots, parameters)
    if parameters.get("kind"):
        return wire_resource(chosen[0])
    return {"resources": [wire_resource(s) for s in chosen]}


def _label(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def state_diff(
    before: list[ResourceSnapshot], after: list[ResourceSnapshot], parameters: dict[str, Any]
) -> dict[str, Any]:
    """The `data` of a state_diff observation: before, after and field-level changes."""
    chosen_after = select_resources(after, parameters)
    keys = {(s.kind, s.namespace, s.name) for s in chosen_after}
    chosen_before = [s for s in before if (s.kind, s.namespace, s.name) in keys]
    changes: list[dict[str, Any]] = []
    for resource in diff(chosen_before, chosen_after):
        if resource.change == "unchanged":
            continue
        label = _label(resource.kind, resource.namespace, resource.name)
        if not resource.fields:
            changes.append({"path": label, "before": None, "after": None, "change": resource.change})
        for change in resource.fields:
            path = f"{label}:{change.path}"
            changes.append({"path": path, "before": change.before, "after": change.after})
    return {
        "before": {_label(s.kind, s.namespace, s.name): wire_resource(s) for s in chosen_before},
        "after": {_label(s.kind, s.namespace, s.name): wire_resource(s) for s in chosen_after},
        "changes": changes,
    }
