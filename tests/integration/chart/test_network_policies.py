"""The chart's NetworkPolicies: agents reach only the gateway, only the operator reaches the sandbox.

Rendered with the real Helm engine, applied for real to the local API server beside pods made from the
chart's own pod templates (and an agent pod from the job adapter's builder), then read as a
connection matrix: the API server picks the pods each selector matches (netpol.py). The local control
plane has no CNI, so this proves what the policies say, not that a network enforces them.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.agents.job import AGENT_POD_LABELS, build_agent_job
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import JobAgent
from tests.cluster_fixtures import wait_for
from tests.integration.chart.netpol import Network, PodRef
from tests.unit.agents.test_adapters import REQUEST
from tests.unit.chart.chart_render import Manifest, find, render

pytestmark = pytest.mark.cluster

VALUES = {"networkPolicies": {"enabled": True}}
FULL = "oasis-oasis-operator"
PORTS = {
    "gateway": 8443,
    "apiserver": 6443,
    "etcd-client": 2379,
    "etcd-metrics": 2381,
    "cm-health": 10257,
    "scheduler-health": 10259,
}


def policies(objects: list[Manifest]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"].removeprefix(f"{FULL}-"): o["spec"]
        for o in objects
        if o["kind"] == "NetworkPolicy"
    }


def test_rendered_policies_select_the_right_pods_and_ports() -> None:
    objects = render(VALUES)
    spec = policies(objects)
    agents = spec["agents"]
    # The agents policy selects what the job adapter puts on every agent pod, nothing release-specific.
    assert agents["podSelector"] == {"matchLabels": {"oasis.evaluation.dev/agent": "true"}}
    assert agents["podSelector"]["matchLabels"].items() <= AGENT_POD_LABELS.items()
    assert (agents["policyTypes"], agents["ingress"]) == (["Ingress", "Egress"], [])
    gateway_rule, dns_rule = agents["egress"]
    assert gateway_rule["to"] == [
        {"podSelector": {"matchLabels": find(objects, "Deployment", FULL)["spec"]["selector"]["matchLabels"]}}
    ]
    assert gateway_rule["ports"] == [{"port": 8443, "protocol": "TCP"}]
    assert dns_rule["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    apiserver = spec["sandbox-apiserver"]
    assert apiserver["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "sandbox-apiserver"
    assert [r["ports"] for r in apiserver["ingress"]] == [[{"port": "https", "protocol": "TCP"}]]
    etcd = spec["sandbox-etcd"]
    assert [(r.get("from"), r["ports"]) for r in etcd["ingress"]][1] == (
        None,
        [{"port": "metrics", "protocol": "TCP"}],
    )
    assert etcd["ingress"][0]["ports"] == [{"port": "client", "protocol": "TCP"}]


def test_agents_in_another_namespace_reach_the_operator_by_namespace_name() -> None:
    spec = policies(render({**VALUES, "agents": {"namespace": "agents"}}))
    peer = spec["agents"]["egress"][0]["to"][0]
    assert peer["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "oasis-system"}}
    assert peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "operator"


def test_no_policies_unless_enabled() -> None:
    assert policies(render()) == {}


def _pod(name: str, template: Manifest) -> Manifest:
    """A pod with the template's labels and container ports (nothing a kubelet would need)."""
    containers = [
        {"name": c["name"], "image": c["image"], "ports": c.get("ports", [])}
        for c in template["spec"]["containers"]
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": template["metadata"]["labels"]},
        "spec": {"automountServiceAccountToken": False, "containers": containers},
    }


def _create(api: ApiClient, namespace: str, obj: Manifest) -> Manifest:
    return request(api, "POST", resource_path(obj["kind"], namespace), obj)  # type: ignore[no-any-return]


def _default_account(api: ApiClient, namespace: str) -> bool:
    try:
        request(api, "GET", resource_path("ServiceAccount", namespace, "default"))
    except ApiException:
        return False
    return True


@pytest.fixture
def network(api: ApiClient, namespace: str) -> tuple[Network, dict[str, PodRef], Manifest]:
    """The policies applied to a fresh namespace (as the release namespace) with one pod per workload."""
    objects = render(VALUES, namespace=namespace)
    wait_for(lambda: _default_account(api, namespace), what="the namespace's default ServiceAccount")
    for policy in (o for o in objects if o["kind"] == "NetworkPolicy"):
        _create(api, namespace, policy)
    agent_account = find(objects, "ServiceAccount", "-agent")
    _create(api, namespace, agent_account)
    workloads = {
        "operator": find(objects, "Deployment", FULL),
        "apiserver": find(objects, "Deployment", "-sandbox-apiserver"),
        "controller-manager": find(objects, "Deployment", "-sandbox-controller-manager"),
        "etcd": find(objects, "StatefulSet", "-sandbox-etcd"),
        "scheduler": find(objects, "Deployment", "-sandbox-scheduler"),
        "kwok": find(objects, "Deployment", "-sandbox-kwok"),
    }
    for name, workload in workloads.items():
        _create(api, namespace, _pod(name, workload["spec"]["template"]))
    job = build_agent_job(
        "agent-run",
        namespace,
        JobAgent(image="registry.example/agent:1"),
        REQUEST,
        service_account=agent_account["metadata"]["name"],
    )
    agent = _create(
        api,
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "agent", **job["spec"]["template"]["metadata"]},
            "spec": job["spec"]["template"]["spec"],
        },
    )
    _create(
        api,
        namespace,
        _pod(
            "bystander",
            {
                "metadata": {"labels": {"app": "bystander"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        ),
    )
    pods = {name: PodRef(namespace, name) for name in [*workloads, "agent", "bystander"]}
    return Network(api, [namespace]), pods, agent


def test_only_the_operator_reaches_the_sandbox_and_agents_reach_only_the_gateway(
    network: tuple[Network, dict[str, PodRef], Manifest],
) -> None:
    net, pods, _ = network
    allowed = {
        (src, dst, port)
        for src in pods
        for dst in pods
        for port in sorted(set(PORTS.values()))
        if src != dst and net.can_connect(pods[src], pods[dst], port)
    }
    # To the sandbox control plane: the operator, the controller manager, the scheduler and kwok reach the
    # API server; only the API server reaches etcd's client port. The health ports stay open for the
    # kubelet's probes; kwok serves nothing.
    assert {(s, d, p) for s, d, p in allowed if d == "apiserver"} == {
        ("operator", "apiserver", 6443),
        ("controller-manager", "apiserver", 6443),
        ("scheduler", "apiserver", 6443),
        ("kwok", "apiserver", 6443),
    }
    assert {(s, p) for s, d, p in allowed if d == "etcd"} == {
        ("apiserver", 2379),
        ("operator", 2381),
        ("controller-manager", 2381),
        ("scheduler", 2381),
        ("kwok", 2381),
        ("apiserver", 2381),
        ("bystander", 2381),
    }
    assert {p for s, d, p in allowed if d == "scheduler"} == {10259}
    assert not {(s, p) for s, d, p in allowed if d == "kwok"}
    # The agent reaches the gateway port of the operator and nothing else; nothing reaches the agent.
    assert {(d, p) for s, d, p in allowed if s == "agent"} == {("operator", 8443)}
    assert not {s for s, d, p in allowed if d == "agent"}
    # The operator accepts the gateway port from anyone (gatewayFrom is empty), nothing it does not serve.
    assert {p for s, d, p in allowed if d == "operator"} == {8443}


def test_the_agent_pod_has_no_service_account_token(
    network: tuple[Network, dict[str, PodRef], Manifest],
) -> None:
    _, _, agent = network
    spec = agent["spec"]
    assert spec["serviceAccountName"] == f"{FULL}-agent"
    assert spec["automountServiceAccountToken"] is False
    mounts = [m["mountPath"] for c in spec["containers"] for m in c.get("volumeMounts", [])]
    assert "/var/run/secrets/kubernetes.io/serviceaccount" not in mounts
    assert not [v for v in spec["volumes"] if "projected" in v or v["name"].startswith(f"{FULL}-token")]
