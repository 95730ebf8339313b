"""The local plane's audit policy on the real API server: the operator's reads are dropped, the
gateway's (the agent's) reads kept at Metadata, every identity's writes at RequestResponse, leases never.

The gateway connects exactly as in production (`gateway.upstream`, its own kubeconfig beside the
admin one, impersonating a ServiceAccount); the operator is the admin kubeconfig.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.gateway.upstream import Upstream, gateway_kubeconfig, impersonation_headers, load_upstream
from oasis_operator.kube import request
from oasis_operator.localcluster.audit import OPERATOR_USER
from oasis_operator.models.environment import AgentServiceAccount
from oasis_operator.pki import GATEWAY_USER
from tests.cluster_fixtures import Cluster, wait_for


def _events(log: Path, offset: int, namespace: str) -> list[dict[str, Any]]:
    with log.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode().splitlines()
    return [e for e in map(json.loads, lines) if namespace in json.dumps(e.get("objectRef") or {})]


async def _as_gateway(kubeconfig: Path, agent: AgentServiceAccount, namespace: str) -> list[int]:
    upstream = Upstream(load_upstream(kubeconfig))
    await upstream.start()
    try:
        codes = []
        for_agent = impersonation_headers(agent)
        body = json.dumps({"metadata": {"name": "by-gateway"}, "data": {"k": "v"}}).encode()
        calls = [
            ("GET", f"/api/v1/namespaces/{namespace}/configmaps/by-operator", for_agent, None),  # agent read
            ("POST", f"/api/v1/namespaces/{namespace}/configmaps", for_agent, body),  # agent write
            ("GET", f"/api/v1/namespaces/{namespace}", [], None),  # the gateway's own filtered read
        ]
        for method, path, extra, data in calls:
            headers = [*extra, ("Accept", "application/json"), ("Content-Type", "application/json")]
            async with upstream.request(method, path, headers, data) as resp:
                await resp.read()
                codes.append(resp.status)
        return codes
    finally:
        await upstream.stop()


def test_policy_drops_the_operators_reads_and_keeps_the_gateways(
    cluster: Cluster, api: ApiClient, namespace: str
) -> None:
    if cluster.audit_log is None or cluster.plane is None:
        pytest.skip("reused cluster: its policy and gateway identity are not this checkout's")
    log = cluster.audit_log
    own = gateway_kubeconfig(cluster.kubeconfig)
    assert own == cluster.plane.gateway_kubeconfig
    agent = AgentServiceAccount(namespace=namespace, service_account="agent")
    # Setup by the operator: a ServiceAccount allowed to read and create ConfigMaps (writes: recorded).
    request(api, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "agent"}})
    role = {
        "metadata": {"name": "cm"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create"]}],
    }
    binding = {"metadata": {"name": "cm"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
               "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": namespace}]}  # fmt: skip
    request(api, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles", role)
    request(api, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", binding)
    offset = log.stat().st_size
    # The operator: one write, two reads (a get and a list, as snapshots make them), a lease.
    cm = {"metadata": {"name": "by-operator"}, "data": {"k": "v"}}
    request(api, "POST", f"/api/v1/namespaces/{namespace}/configmaps", cm)
    request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps/by-operator")
    request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    lease = {"metadata": {"name": "holder"}, "spec": {"holderIdentity": "x"}}
    request(api, "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", lease)
    # The gateway: the agent's read and write, and a read as itself.
    assert asyncio.run(_as_gateway(own, agent, namespace)) == [200, 201, 200]
    # A last write by the operator marks the end: once it is in the log, everything before it is.
    request(api, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/by-operator")

    def settled() -> list[dict[str, Any]] | None:
        events = _events(log, offset, namespace)
        return events if any(e["verb"] == "delete" for e in events) else None

    events = wait_for(settled, timeout=30, what="the operator's delete in the audit log")
    seen = [
        (
            e["user"]["username"],
            (e.get("impersonatedUser") or {}).get("username"),
            e["verb"],
            e["objectRef"].get("resource"),
            e["objectRef"].get("name"),
            e["level"],
        )
        for e in events
        if e["objectRef"].get("resource") in {"configmaps", "leases", "namespaces"}
    ]
    assert seen == [
        (OPERATOR_USER, None, "create", "configmaps", "by-operator", "RequestResponse"),
        (GATEWAY_USER, agent.username, "get", "configmaps", "by-operator", "Metadata"),
        (GATEWAY_USER, agent.username, "create", "configmaps", "by-gateway", "RequestResponse"),
        (GATEWAY_USER, None, "get", "namespaces", namespace, "Metadata"),
        (OPERATOR_USER, None, "delete", "configmaps", "by-operator", "RequestResponse"),
    ], seen
    written = [e for e in events if e["verb"] == "create" and e["objectRef"]["resource"] == "configmaps"]
    assert all(e["requestObject"]["data"] == {"k": "v"} and e["responseObject"]["metadata"]["uid"]
               for e in written)  # fmt: skip
