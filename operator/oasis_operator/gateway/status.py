"""Kubernetes `Status` documents the gateway answers with when it decides a request itself."""

from __future__ import annotations

from typing import Any

from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.gateway.virtual import object_name

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    429: "TooManyRequests",
    503: "ServiceUnavailable",
}


def status_document(code: int, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A `Status` failure as the API server writes it."""
    doc: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": REASONS.get(code, "InternalError"),
        "code": code,
    }
    if details:
        doc["details"] = details
    return doc


def forbidden_message(
    user: str, verb: str, resource: str, group: str, namespace: str, name: str = "", subresource: str = ""
) -> str:
    """The API server's wording of an RBAC refusal."""
    full = f"{resource}/{subresource}" if subresource else resource
    subject = f'{resource} "{name}"' if name else resource
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'{subject} is forbidden: User "{user}" cannot {verb} resource "{full}" '
        f'in API group "{group}" {where}'
    )


def not_found_named(info: RequestInfo) -> dict[str, Any]:
    """The API server's 404 for the object a named get asked for."""
    plural = info.resource + (f".{info.api_group}" if info.api_group else "")
    details = {"name": info.name, "group": info.api_group, "kind": info.resource}
    return status_document(404, f'{plural} "{info.name}" not found', {k: v for k, v in details.items() if v})


def not_found(doc: dict[str, Any]) -> dict[str, Any]:
    """The API server's 404 for an object the agent must not see (as if it did not exist)."""
    name = object_name(doc)
    kind = str(doc.get("kind") or "Secret")
    group = str(doc.get("apiVersion", "")).rpartition("/")[0]
    plural = kind.lower() + "s" + (f".{group}" if group else "")
    details = {"name": name, "group": group, "kind": plural}
    return status_document(404, f'{plural} "{name}" not found', {k: v for k, v in details.items() if v})
