"""Requests the gateway refuses itself, whatever the sandbox's RBAC would say (pure decisions).

Real RBAC decides everything else. These are refused at the door because answering them would hand
the agent a way past the gateway: a credential for the sandbox (ServiceAccount tokens, token Secrets,
certificate requests), a connection made by the sandbox API server on the agent's behalf (the `proxy`
subresources reach services, nodes and pods, i.e. addresses the twin declares; `exec`, `attach` and
`portforward` would run a command in, or open a port of, a container, unless the scenario grants them:
then the gateway serves them itself, `apis/connect.py`), someone else's identity
(impersonation), or knowledge about other identities (token and access reviews about another subject).
Reviews about the agent itself (`SelfSubjectAccessReview`, `SelfSubjectRulesReview`, used by
`kubectl auth can-i`) stay allowed: RBAC answers them for the agent's own identity, nothing is stored,
and they tell the agent only what it could learn by trying.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.gateway.status import forbidden_message, status_document
from oasis_operator.models.verbs import REQUEST_BODY_WRITE_VERBS

SERVICE_ACCOUNT_TOKEN_TYPE = b"kubernetes.io/service-account-token"
# Reviews that ask about an identity other than the caller's, or check a token: refused.
_REVIEWS_OF_OTHERS = {
    ("authentication.k8s.io", "tokenreviews"): "a token review (would tell valid sandbox tokens apart)",
    ("authorization.k8s.io", "subjectaccessreviews"): "an access review about another identity",
    ("authorization.k8s.io", "localsubjectaccessreviews"): "an access review about another identity",
}
_UNSAFE_SEGMENT = re.compile(r"[?#%\\\s\x00-\x1f]")
# The pod subresources that would open a stream into a container (`kubectl exec`, `attach`,
# `port-forward`): the API server authorises each as `create` on `pods/<subresource>`, whatever the
# method (the websocket upgrade is a GET, SPDY a POST).
CONNECT_SUBRESOURCES = {"exec": "exec", "attach": "attach", "portforward": "port-forward"}


@dataclass(frozen=True)
class Refusal:
    """The gateway's answer to a request it will not forward, and the note for the record."""

    code: int
    document: dict[str, Any]
    note: str


def _forbidden(user: str, info: RequestInfo, note: str, subresource: str | None = None) -> Refusal:
    sub = info.subresource if subresource is None else subresource
    message = forbidden_message(
        user, info.verb, info.resource, info.api_group, info.namespace, info.name, sub
    )
    details = {"name": info.name, "group": info.api_group, "kind": info.resource}
    return Refusal(403, status_document(403, message, {k: v for k, v in details.items() if v}), note)


def refusal(
    info: RequestInfo, user: str, body: bytes = b"", granted: frozenset[str] = frozenset()
) -> Refusal | None:
    """Why the gateway refuses this resource request itself (403, as RBAC words it), or None.

    `granted`: the pod subresources (`exec`, `attach`, `portforward`) the scenario grants and the
    gateway serves itself; the others are refused.
    """
    if not info.is_resource:
        return None
    first_sub = info.subresource.split("/", 1)[0]
    if first_sub == "proxy" or info.resource == "proxy":
        note = "refused: proxy (the sandbox API server would connect to a service, node or pod address)"
        return _forbidden(user, info, note, "proxy")
    if connect_subresource(info) and first_sub not in granted:
        command = CONNECT_SUBRESOURCES[first_sub]
        note = f"refused: {command} (least privilege: no command or connection into a container)"
        return _forbidden(user, replace(info, verb="create"), note, first_sub)
    if info.resource == "serviceaccounts" and first_sub == "token":
        return _forbidden(user, info, "refused: ServiceAccount token request")
    review = _REVIEWS_OF_OTHERS.get((info.api_group, info.resource))
    if review is not None:
        return _forbidden(user, info, f"refused: {review}")
    csr = info.api_group == "certificates.k8s.io" and info.resource == "certificatesigningrequests"
    if csr and info.verb in REQUEST_BODY_WRITE_VERBS:
        return _forbidden(user, info, "refused: certificate signing request (a sandbox credential)")
    # A patch creates too: server-side apply of an absent object (`kubectl apply --server-side`).
    secret_write = info.resource == "secrets" and not info.api_group and info.verb in REQUEST_BODY_WRITE_VERBS
    if secret_write and _declares_token_secret(body):
        return _forbidden(user, info, "refused: a ServiceAccount token Secret (a sandbox credential)")
    return None


def connect_subresource(info: RequestInfo) -> str:
    """`exec`, `attach` or `portforward` for a request that opens a stream into a pod's container, else ""."""
    first_sub = info.subresource.split("/", 1)[0]
    is_pod = info.is_resource and info.resource == "pods" and not info.api_group
    return first_sub if is_pod and first_sub in CONNECT_SUBRESOURCES else ""


def _declares_token_secret(body: bytes) -> bool:
    """Whether a Secret body has the ServiceAccount token type (the token controller would fill it in)."""
    if SERVICE_ACCOUNT_TOKEN_TYPE not in body:
        return False
    try:
        doc = json.loads(body)
    except ValueError:
        return True  # protobuf (or not JSON at all): the type string is there, so refuse
    return not isinstance(doc, dict) or doc.get("type") == SERVICE_ACCOUNT_TOKEN_TYPE.decode()


def impersonation_refusal(user: str, asked: str) -> Refusal:
    """The agent asked to act as someone else (`kubectl --as`): refused as RBAC refuses it."""
    message = (
        f'users "{asked}" is forbidden: User "{user}" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    )
    doc = status_document(403, message, {"name": asked, "kind": "users"})
    return Refusal(403, doc, f"impersonation of {asked!r} requested")


def malformed_path(tail: str, raw_path: str) -> str:
    """Why a path may not be forwarded (dot segments, encoded separators, control characters), or ""."""
    if re.search(r"%(2[fF]|5[cC]|2[eE])", raw_path):
        return "the request path contains an encoded separator or dot"
    for segment in tail.split("/")[1:]:
        if segment in {".", ".."} or _UNSAFE_SEGMENT.search(segment):
            return f"the request path segment {segment!r} is not valid"
    return ""


def body_too_large(limit: int) -> Refusal:
    """The 413 for a request body over the gateway's limit (never read, never forwarded)."""
    message = f"request entity too large: the gateway accepts request bodies of at most {limit} bytes"
    doc = status_document(413, message, {"causes": [{"reason": "RequestEntityTooLarge", "message": message}]})
    return Refusal(413, doc, f"refused: request body over {limit} bytes")


async def read_body(request: web.Request, limit: int) -> bytes | None:
    """The request body, or None when it is larger than `limit` (a declared length is not even read)."""
    length = request.content_length
    if length is not None and length > limit:
        return None
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return None
    return body if len(body) <= limit else None
