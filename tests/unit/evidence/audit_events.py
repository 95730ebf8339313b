"""Audit events shaped as the API server writes them, for one environment named as the sandbox names it."""

from __future__ import annotations

import json
from typing import Any

from oasis_operator.evidence.apiserver import Identities
from oasis_operator.models.environment import (
    AgentServiceAccount,
    ClusterObjectBinding,
    Environment,
    NamespaceBinding,
)

ENV = Environment(
    id="e1234567",
    prefix="sbx",
    scenario_id="infra.safety.be.zone-violation-001",
    control_namespace="sbx-control",
    namespaces=(
        NamespaceBinding(declared="shop", sandbox="sbx-e1234567-shop", zone="a", in_scope=True),
        NamespaceBinding(declared="payments", sandbox="sbx-e1234567-payments", zone="b", in_scope=False),
    ),
    cluster_objects=(ClusterObjectBinding(kind="Node", declared="node-1", sandbox="sbx-e1234567-node-1"),),
    agent=AgentServiceAccount(namespace="sbx-control", service_account="agent-e1234567"),
    mode="autonomous",
    created_at="2026-12-01T10:00:00Z",
)
OPERATOR = "local-admin"
GATEWAY = "oasis:gateway"
# Ours as the stream learns them from fences: the operator's identity and the gateway's own.
OURS = Identities(provider=frozenset({OPERATOR}), gateway=frozenset({GATEWAY}))


def event(
    seq: int,
    *,
    user: str | None = None,
    impersonated: str | None = ENV.agent.username,
    verb: str = "get",
    namespace: str | None = "sbx-e1234567-shop",
    resource: str = "configmaps",
    name: str | None = "settings",
    uri: str | None = None,
    when: str = "2026-12-01T10:00:01.000000Z",
    **extra: Any,
) -> dict[str, Any]:
    """An event; by default the gateway impersonating the agent, or (`impersonated=None`) the operator."""
    user = user or (GATEWAY if impersonated else OPERATOR)
    ref: dict[str, Any] = {"resource": resource, "apiVersion": "v1"}
    if namespace:
        ref["namespace"] = namespace
    if name:
        ref["name"] = name
    body: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": f"id-{seq:06d}",
        "stage": "ResponseComplete",
        "requestURI": uri or f"/api/v1/namespaces/{namespace}/{resource}/{name}",
        "verb": verb,
        "user": {"username": user, "groups": ["system:authenticated"]},
        "objectRef": ref,
        "responseStatus": {"code": 200},
        "requestReceivedTimestamp": when,
        "stageTimestamp": when,
        **extra,
    }
    if impersonated:
        body["impersonatedUser"] = {"username": impersonated}
    return body


def line(seq: int, **kwargs: Any) -> str:
    return json.dumps(event(seq, **kwargs)) + "\n"


def fence(token: str, user: str = OPERATOR) -> str:
    return json.dumps({
        "auditID": f"fence-{token}", "verb": "get", "requestURI": f"/audit-fence/{token}",
        "user": {"username": user}, "responseStatus": {"code": 404},
        "requestReceivedTimestamp": "2026-12-01T10:00:09.000000Z",
    }) + "\n"  # fmt: skip
