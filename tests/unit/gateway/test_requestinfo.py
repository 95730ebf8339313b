"""Request classification, as the API server does it."""

from __future__ import annotations

import pytest

from oasis_operator.gateway.requestinfo import parse_request


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/default/pods", "",
         ("list", "", "pods", "", "", "default")),
        ("GET", "/api/v1/namespaces/default/pods", "watch=true",
         ("watch", "", "pods", "", "", "default")),
        ("GET", "/api/v1/watch/namespaces/default/pods", "",
         ("watch", "", "pods", "", "", "default")),
        ("GET", "/api/v1/namespaces/default/pods/p-1/log", "tailLines=5",
         ("get", "", "pods", "log", "p-1", "default")),
        ("PATCH", "/apis/apps/v1/namespaces/prod/deployments/api/scale", "",
         ("patch", "apps", "deployments", "scale", "api", "prod")),
        ("DELETE", "/api/v1/namespaces/default/configmaps", "",
         ("deletecollection", "", "configmaps", "", "", "default")),
        ("DELETE", "/api/v1/namespaces/default/configmaps/x", "",
         ("delete", "", "configmaps", "", "x", "default")),
        ("POST", "/api/v1/namespaces/default/serviceaccounts/agent/token", "",
         ("create", "", "serviceaccounts", "token", "agent", "default")),
        ("GET", "/api/v1/namespaces", "",
         ("list", "", "namespaces", "", "", "")),
        ("GET", "/api/v1/namespaces/prod", "",
         ("get", "", "namespaces", "", "prod", "prod")),
        ("PUT", "/api/v1/namespaces/prod/finalize", "",
         ("update", "", "namespaces", "finalize", "prod", "prod")),
        ("GET", "/api/v1/nodes/worker-1", "",
         ("get", "", "nodes", "", "worker-1", "")),
        ("GET", "/apis/apps/v1/deployments", "",
         ("list", "apps", "deployments", "", "", "")),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "",
         ("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", "")),
    ],
)  # fmt: skip
def test_resource_requests(method: str, path: str, query: str, expected: tuple[str, ...]) -> None:
    info = parse_request(method, path, query)
    assert info.is_resource
    assert (info.verb, info.api_group, info.resource, info.subresource, info.name, info.namespace) == expected


@pytest.mark.parametrize("path", ["/api", "/apis", "/apis/apps/v1", "/version", "/openapi/v2", "/api/v1"])
def test_discovery_is_not_a_resource(path: str) -> None:
    assert not parse_request("GET", path).is_resource


def test_selectors_and_path_round_trip() -> None:
    info = parse_request(
        "GET",
        "/api/v1/namespaces/default/events",
        "fieldSelector=involvedObject.name%3Dx&labelSelector=app%3Dy",
    )
    assert info.field_selector == "involvedObject.name=x"
    assert info.label_selector == "app=y"
    assert info.with_namespace("ev-1-default").path() == "/api/v1/namespaces/ev-1-default/events"
    ns = parse_request("GET", "/api/v1/namespaces/prod/status")
    assert ns.path() == "/api/v1/namespaces/prod/status"
