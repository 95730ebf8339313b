"""What the gateway refuses itself, whatever RBAC says, and what it leaves to RBAC."""

from __future__ import annotations

import json

import pytest

from oasis_operator.gateway.guards import body_too_large, impersonation_refusal, malformed_path, refusal
from oasis_operator.gateway.requestinfo import parse_request

USER = "system:serviceaccount:ev-abc123-ctl:agent"
TOKEN_SECRET = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "t", "annotations": {"kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token",
    }
).encode()


@pytest.mark.parametrize(
    ("method", "path", "body", "note"),
    [
        ("GET", "/api/v1/namespaces/default/services/https:kubernetes:443/proxy/", b"", "refused: proxy"),
        ("GET", "/api/v1/namespaces/default/services/web/proxy/admin/config", b"", "refused: proxy"),
        ("POST", "/api/v1/namespaces/default/pods/web-1/proxy", b"", "refused: proxy"),
        ("GET", "/api/v1/nodes/worker-1/proxy/configz", b"", "refused: proxy"),
        ("GET", "/api/v1/proxy/namespaces/default/services/web", b"", "refused: proxy"),
        (
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/default/token",
            b"{}",
            "refused: ServiceAccount",
        ),
        ("POST", "/apis/authentication.k8s.io/v1/tokenreviews", b"{}", "refused: a token review"),
        ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", b"{}", "refused: an access review"),
        (
            "POST",
            "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
            b"{}",
            "refused: an access review",
        ),
        ("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", b"{}", "refused: certificate"),
        (
            "PUT",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/x/approval",
            b"{}",
            "refused: certificate",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/secrets",
            TOKEN_SECRET,
            "refused: a ServiceAccount token Secret",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/secrets",
            b"\x6b\x38\x73kubernetes.io/service-account-token",
            "refused: a ServiceAccount token Secret",
        ),
    ],
)
def test_refused_whatever_rbac_says(method: str, path: str, body: bytes, note: str) -> None:
    info = parse_request(method, path)
    refused = refusal(info, USER, body)
    assert refused is not None
    assert refused.code == 403
    assert refused.note.startswith(note)
    assert refused.document["reason"] == "Forbidden"
    assert refused.document["message"].startswith(f"{info.resource}")
    assert f'User "{USER}" cannot' in refused.document["message"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", b"{}"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", b"{}"),
        ("GET", "/api/v1/namespaces/default/secrets", b""),
        ("POST", "/api/v1/namespaces/default/secrets", b'{"kind":"Secret","type":"Opaque"}'),
        # The type name inside an Opaque secret's data is data, not a token Secret.
        (
            "POST",
            "/api/v1/namespaces/default/secrets",
            b'{"kind":"Secret","type":"Opaque","stringData":{"k":"kubernetes.io/service-account-token"}}',
        ),
        ("GET", "/api/v1/namespaces/default/serviceaccounts/default", b""),
        ("GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests", b""),
        ("GET", "/api/v1/namespaces/default/services/exec", b""),  # a Service named "exec"
        ("GET", "/apis/apps/v1/namespaces/default/deployments/web/exec", b""),  # not a pod subresource
        ("GET", "/api/v1/namespaces/default/services/proxy", b""),  # a Service named "proxy"
        ("GET", "/version", b""),
    ],
)
def test_left_to_rbac(method: str, path: str, body: bytes) -> None:
    assert refusal(parse_request(method, path), USER, body) is None


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
@pytest.mark.parametrize(
    ("query", "subresource", "command"),
    [
        ("command=ls&container=web&stdout=true", "exec", "exec"),
        ("container=web&stdin=true&tty=true", "attach", "attach"),
        ("ports=8080", "portforward", "port-forward"),
    ],
)
def test_exec_attach_and_port_forward_are_refused_as_a_create_whatever_the_method(
    method: str, query: str, subresource: str, command: str
) -> None:
    info = parse_request(method, f"/api/v1/namespaces/prod/pods/web-1/{subresource}", query)
    refused = refusal(info, USER)
    assert refused is not None
    assert refused.code == 403
    assert refused.note.startswith(f"refused: {command} (")
    assert refused.document == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "web-1" is forbidden: User "{USER}" cannot create resource "pods/{subresource}" '
        'in API group "" in the namespace "prod"',
        "reason": "Forbidden",
        "details": {"name": "web-1", "kind": "pods"},
        "code": 403,
    }


def test_proxy_refusal_names_the_proxy_subresource() -> None:
    info = parse_request("GET", "/api/v1/namespaces/default/services/https:kubernetes:443/proxy/")
    refused = refusal(info, USER)
    assert refused is not None
    assert refused.document["message"] == (
        f'services "https:kubernetes:443" is forbidden: User "{USER}" cannot get resource '
        '"services/proxy" in API group "" in the namespace "default"'
    )


def test_impersonation_is_refused_as_rbac_refuses_it() -> None:
    refused = impersonation_refusal(USER, "system:admin")
    assert (refused.code, refused.note) == (403, "impersonation of 'system:admin' requested")
    assert refused.document["details"] == {"name": "system:admin", "kind": "users"}


def test_body_too_large_is_a_413_status_naming_the_limit() -> None:
    refused = body_too_large(1024)
    assert refused.code == 413
    assert refused.document["reason"] == "RequestEntityTooLarge"
    assert "at most 1024 bytes" in refused.document["message"]


@pytest.mark.parametrize(
    ("tail", "raw", "expected"),
    [
        ("/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/pods", ""),
        ("/api/v1/namespaces/../pods", "/api/v1/namespaces/../pods", "segment '..'"),
        ("/api/v1/namespaces/./pods", "/api/v1/namespaces/./pods", "segment '.'"),
        ("/api/v1/namespaces/../pods", "/api/v1/namespaces/%2e%2e/pods", "encoded separator or dot"),
        ("/api/v1/namespaces/a/b/pods", "/api/v1/namespaces/a%2Fb/pods", "encoded separator or dot"),
        ("/api/v1/namespaces/a\\b/pods", "/api/v1/namespaces/a%5cb/pods", "encoded separator or dot"),
        ("/api/v1/namespaces/a b/pods", "/api/v1/namespaces/a%20b/pods", "segment 'a b'"),
    ],
)
def test_malformed_paths(tail: str, raw: str, expected: str) -> None:
    found = malformed_path(tail, raw)
    assert (expected in found) if expected else found == ""
