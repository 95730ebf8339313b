"""What the record keeps of one request and its answer, built straight as `models.evidence.AuditEntry`.

Fixture API requests are named by what they serve, as the engine names observability state
(`engine/state.py` QUERY_RESOURCES): metrics, alerts, traces, dashboards. Bodies are kept up to a bound
and, past it, trimmed with a marker that says so (never silently).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from oasis_operator.gateway.attribution import Attribution
from oasis_operator.gateway.recorder import Completion
from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.gateway.virtual import NameMap
from oasis_operator.models.evidence import Actor, AuditEntry
from oasis_operator.models.verbs import REQUEST_WRITE_VERBS

# Request bodies: larger than any object the API server stores (etcd's limit is ~1.5 MiB).
MAX_RECORDED_BODY = 2 << 20
# Objects returned for writes: the after-state of one object, bounded so a record cannot balloon.
MAX_RESPONSE_BODY = 256 << 10
# Reads larger than this are not parsed again for the record (big lists carry no single object).
MAX_PARSED_READ = 64 << 10
FIXTURE_RESOURCES = {"prometheus": "metrics", "jaeger": "traces", "grafana": "dashboards"}
_NOT_AN_OBJECT = frozenset({"Status", "Table", "APIResourceList", "APIGroupList", "APIGroup", "APIVersions"})


def fixture_resource(api: str, path: str) -> str:
    """The engine's resource name for a request to a fixture API (alerts come from the Prometheus API)."""
    if api == "prometheus" and "/alerts" in path:
        return "alerts"
    return FIXTURE_RESOURCES.get(api, api)


def trimmed(text: str, limit: int) -> dict[str, Any]:
    """The marker that stands for a body over the bound: its size and its first `limit` bytes."""
    raw = text.encode()
    return {"truncated": {"bytes": len(raw), "kept": limit}, "text": raw[:limit].decode(errors="ignore")}


def recorded_body(body: bytes, content_type: str = "") -> Any:
    """A request body as the record keeps it: JSON as JSON, text as text, protobuf as base64."""
    if not body:
        return None
    if "protobuf" in content_type:
        encoded = base64.b64encode(body[:MAX_RECORDED_BODY]).decode()
        doc: dict[str, Any] = {"encoding": "protobuf", "base64": encoded}
        if len(body) > MAX_RECORDED_BODY:
            doc["truncated"] = {"bytes": len(body), "kept": MAX_RECORDED_BODY}
        return doc
    text = body.decode("utf-8", errors="replace")
    if len(body) > MAX_RECORDED_BODY:
        return trimmed(text, MAX_RECORDED_BODY)
    try:
        return json.loads(text)
    except ValueError:
        return text


def media_type(content_type: str | None) -> str:
    """`application/apply-patch+yaml; charset=utf-8` → `application/apply-patch+yaml`.

    A body sent without a type is read by the API server as JSON (and forwarded as such): recorded so.
    """
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind or "application/json"


def query_of(raw_query: str) -> dict[str, str]:
    """Query parameters as sent; the last value wins for a repeated key."""
    return dict(parse_qsl(raw_query, keep_blank_values=True))


@dataclass(frozen=True)
class RequestFacts:
    """What the server knows of a request when it records it."""

    method: str
    path: str  # as sent, below the door if there was one, with the query
    raw_query: str
    content_type: str | None
    body: bytes
    api: str  # kubernetes, or the fixture API's name
    api_path: str  # the path below the fixture API's prefix
    info: RequestInfo | None  # None for fixture APIs and malformed paths
    client_session: str | None = None  # kubectl's `Kubectl-Session` header: one id per kubectl command


def request_facts(
    request: web.Request, path: str, body: bytes, api: tuple[str, str], info: RequestInfo | None
) -> RequestFacts:
    """What the record keeps of a request: `path` as recorded (without its query), `api` the API and
    the path below its prefix, `info` the Kubernetes classification (None for a malformed path)."""
    query = request.rel_url.raw_query_string
    return RequestFacts(
        method=request.method,
        path=path + (f"?{query}" if query else ""),
        raw_query=query,
        content_type=request.headers.get("Content-Type"),
        body=body,
        api=api[0],
        api_path=api[1],
        info=info if api[0] == "kubernetes" else None,
        client_session=request.headers.get("Kubectl-Session"),
    )


def request_entry(facts: RequestFacts, who: Attribution, names: NameMap | None, user: str) -> AuditEntry:
    """The request line of the record (numbered, timed and completed by the recorder)."""
    info = facts.info
    entry: dict[str, Any] = {
        "seq": 0,
        "time": "",
        "method": facts.method,
        "path": facts.path,
        "verb": facts.method.lower(),
        "resource": "" if facts.api == "kubernetes" else fixture_resource(facts.api, facts.api_path),
        "user": user if who.actor == Actor.AGENT else "",
        "actor": who.actor,
        "credential": who.credential,
        "content_type": media_type(facts.content_type) if facts.body else None,
        "query": query_of(facts.raw_query),
        "request_body": recorded_body(facts.body, facts.content_type or ""),
        "response_code": 0,
    }
    if facts.client_session:
        entry["client_session"] = facts.client_session[:64]
    if info is not None:
        entry.update(
            verb=info.verb,
            group=info.api_group,
            version=info.api_version or "v1",
            resource=info.resource,
            subresource=info.subresource or None,
            name=info.name or None,
            namespace=info.namespace or None,
            sandbox_namespace=(names.sandbox_namespace(info.namespace) if names and info.namespace else None),
            label_selector=info.label_selector or None,
            field_selector=info.field_selector or None,
        )
    return AuditEntry.model_validate(entry)


def recorded_document(method: str, content_type: str, body: bytes) -> Any:
    """The answer as the record needs it: parsed JSON for writes and small reads (not big lists)."""
    if "json" not in content_type or (method == "GET" and len(body) > MAX_PARSED_READ):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def completion(
    code: int,
    size: int,
    note: str,
    verb: str,
    document: Any,
    served: tuple[str, ...] | None = None,
    recorded: Any = None,
) -> Completion:
    """The response line: the returned object's uid and resourceVersion, and its body for writes; for a
    fixture API, the declared entries its answer was drawn from; what the gateway served itself on a
    stream (`recorded`: an exec's command and output) as the body."""
    if recorded is not None:
        return Completion(code, size, note, body=recorded, served=served)
    if not isinstance(document, dict) or document.get("kind") in _NOT_AN_OBJECT:
        return Completion(code, size, note, served=served)
    if str(document.get("kind", "")).endswith("List") or "items" in document:
        return Completion(code, size, note, served=served)
    meta = document.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    body: Any = None
    if verb in REQUEST_WRITE_VERBS:
        text = json.dumps(document, separators=(",", ":"))
        body = document if len(text.encode()) <= MAX_RESPONSE_BODY else trimmed(text, MAX_RESPONSE_BODY)
    return Completion(
        code,
        size,
        note,
        uid=uid if isinstance(uid, str) else None,
        resource_version=version if isinstance(version, str) else None,
        body=body,
        served=served,
    )


def api_of(tail: str, apis: Collection[str]) -> tuple[str, str]:
    """Which API a path below the door belongs to: a registered API's prefix, or the Kubernetes API."""
    first, _, rest = tail.lstrip("/").partition("/")
    if first in apis:
        return first, "/" + rest
    return "kubernetes", tail
