"""Kubernetes `Status` documents the gateway answers with when it decides a request itself."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

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


def status_response(code: int, message: str, details: dict[str, Any] | None = None) -> web.Response:
    """A `Status` failure as an HTTP response."""
    body = json.dumps(status_document(code, message, details)).encode()
    return web.Response(status=code, body=body, content_type="application/json")


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
