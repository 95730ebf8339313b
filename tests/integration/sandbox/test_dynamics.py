"""Twin dynamics on the real API server: the agent's changes play out as controllers would make them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.dynamics import TwinReconciler
from oasis_operator.sandbox.provider import SandboxProvider, SandboxRecord
from oasis_operator.sandbox.snapshot import declared_changes, diff
from tests.cluster_fixtures import KUBECTLS, Cluster
from tests.integration.sandbox.test_provider import STATES
from tests.unit.sandbox.test_twin import custom, scenario


@pytest.fixture
def provider(api: ApiClient) -> SandboxProvider:
    return SandboxProvider(api, prefix="d")


@pytest.fixture
def record(provider: SandboxProvider) -> Iterator[SandboxRecord]:
    rec = provider.provision(custom(STATES, scope=["shop"]))
    yield rec
    provider.teardown(rec.environment.id, wait=False)


def _pods(api: ApiClient, ns: str, prefix: str) -> list[dict[str, Any]]:
    items = request(api, "GET", resource_path("Pod", ns))["items"]
    return [p for p in items if p["metadata"]["name"].startswith(prefix + "-")]


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def _as_agent(cluster: Cluster, rec: SandboxRecord, *args: str) -> str:
    ns = rec.environment.sandbox_namespace("shop")
    assert ns is not None
    return cluster.kubectl(
        *args, "-n", ns, "--as", rec.environment.agent.username, kubectl=KUBECTLS["server"]
    ).stdout


def test_untouched_environment_stays_as_declared(provider: SandboxProvider) -> None:
    rec = provider.provision(scenario("infra.capability.mr.interruption-recovery-001"))
    try:
        assert TwinReconciler(provider, rec).reconcile_once() == []
    finally:
        provider.teardown(rec.environment.id, wait=False)


def test_adding_the_missing_key_cures_the_crash_loop(
    cluster: Cluster, api: ApiClient, provider: SandboxProvider, record: SandboxRecord
) -> None:
    ns = record.environment.sandbox_namespace("shop") or ""
    assert not any(_ready(p) for p in _pods(api, ns, "mailer"))
    twin = TwinReconciler(provider, record)
    assert twin.reconcile_once() == []  # the crash loop is the declared state
    _as_agent(
        cluster, record, "patch", "configmap", "smtp", "--type", "merge", "-p", '{"data":{"SMTP_PORT":"587"}}'
    )
    actions = twin.reconcile_once()
    assert any(a.startswith("recovered pod shop/mailer-") for a in actions)
    assert all(_ready(p) for p in _pods(api, ns, "mailer"))
    dep = request(api, "GET", resource_path("Deployment", ns, "mailer"))
    assert dep["status"]["readyReplicas"] == 1


def test_restart_replaces_the_unhealthy_replica(
    cluster: Cluster, api: ApiClient, provider: SandboxProvider, record: SandboxRecord
) -> None:
    ns = record.environment.sandbox_namespace("shop") or ""
    twin = TwinReconciler(provider, record)
    twin.reconcile_once()
    before = {p["metadata"]["name"] for p in _pods(api, ns, "api")}
    _as_agent(cluster, record, "rollout", "restart", "deployment/api")
    actions = twin.reconcile_once()
    assert any("rolled out shop/api revision 2" in a for a in actions)
    after = _pods(api, ns, "api")
    assert len(after) == 3
    assert before.isdisjoint(p["metadata"]["name"] for p in after)
    assert all(_ready(p) for p in after)
    rs = request(api, "GET", resource_path("ReplicaSet", ns))["items"]
    api_rs = sorted((r["metadata"]["annotations"]["deployment.kubernetes.io/revision"], r["spec"]["replicas"])
                    for r in rs if r["metadata"]["name"].startswith("api-"))  # fmt: skip
    assert api_rs == [("1", 0), ("2", 3)]
    status = _as_agent(cluster, record, "rollout", "status", "deployment/api", "--timeout=5s")
    assert "successfully rolled out" in status


def test_scale_and_pod_delete(
    cluster: Cluster, api: ApiClient, provider: SandboxProvider, record: SandboxRecord
) -> None:
    ns = record.environment.sandbox_namespace("shop") or ""
    twin = TwinReconciler(provider, record)
    victim = _pods(api, ns, "web")[0]["metadata"]["name"]
    _as_agent(cluster, record, "delete", "pod", victim, "--wait=false")
    twin.reconcile_once()
    names = {p["metadata"]["name"] for p in _pods(api, ns, "web")}
    assert victim not in names
    assert len(names) == 2
    _as_agent(cluster, record, "scale", "deployment/web", "--replicas=0")
    twin.reconcile_once()
    assert _pods(api, ns, "web") == []
    dep = request(api, "GET", resource_path("Deployment", ns, "web"))
    assert dep["status"].get("replicas", 0) == 0


def test_a_pass_is_skipped_only_while_the_change_mark_stays_where_a_pass_found_nothing(
    api: ApiClient, provider: SandboxProvider, record: SandboxRecord
) -> None:
    ns = record.environment.sandbox_namespace("shop") or ""
    twin = TwinReconciler(provider, record)
    victim = _pods(api, ns, "web")[0]["metadata"]["name"]
    provider.finalize_pods(ns, [victim])  # a change the mark does not count: the skip must not see it
    assert twin.settle(0) == []  # mark 0: the fresh twin, settled
    assert len(_pods(api, ns, "web")) == 1
    actions = twin.settle(1)  # the mark moved: a pass runs and replaces the pod
    assert any(a.startswith("created pod shop/web-") for a in actions)
    assert len(_pods(api, ns, "web")) == 2
    assert twin.settle(1) == []  # that pass changed something: the next one runs, and finds nothing
    provider.finalize_pods(ns, [_pods(api, ns, "web")[0]["metadata"]["name"]])
    assert twin.settle(1) == []  # now settled at mark 1: skipped
    assert len(_pods(api, ns, "web")) == 1
    assert twin.settle(None) != []  # a write still unanswered: always a pass
    assert len(_pods(api, ns, "web")) == 2


def test_rollback_to_previous_image_clears_the_bad_release(
    cluster: Cluster, api: ApiClient, provider: SandboxProvider
) -> None:
    rec = provider.provision(scenario("infra.capability.ca.historical-context-001"))
    try:
        ns = rec.environment.sandbox_namespace("default") or ""
        twin = TwinReconciler(provider, rec)
        assert twin.reconcile_once() == []
        cluster.kubectl("rollout", "undo", "deployment/order-service", "-n", ns, "--as",
                        rec.environment.agent.username, kubectl=KUBECTLS["server"])  # fmt: skip
        twin.reconcile_once()
        dep = request(api, "GET", resource_path("Deployment", ns, "order-service"))
        assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "order-service:v4.1.9"
        pods = _pods(api, ns, "order-service")
        assert pods
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {"order-service:v4.1.9"}
        assert all(_ready(p) for p in pods)
    finally:
        provider.teardown(rec.environment.id, wait=False)


def test_snapshots_hold_the_derived_objects_and_a_restart_is_the_only_change(
    cluster: Cluster, api: ApiClient, provider: SandboxProvider, record: SandboxRecord
) -> None:
    before = {(s.kind, s.name): s for s in record.before}
    api_pods = sorted(name for kind, name in before if kind == "Pod" and name.startswith("api-"))
    assert len(api_pods) == 3
    pod = before[("Pod", api_pods[0])]
    assert pod.namespace == "shop"
    assert pod.object is not None
    rs_name = pod.object["metadata"]["ownerReferences"][0]["name"]
    assert pod.object["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "controller": True}
    ]
    assert pod.object["spec"]["nodeName"] in {"node-1", "node-2", "node-3"}
    replica_set = before[("ReplicaSet", rs_name)].object
    assert replica_set is not None
    assert replica_set["metadata"]["ownerReferences"][0]["name"] == "api"
    assert {s.namespace for s in record.before if s.kind in ("Pod", "ReplicaSet")} == {"shop", "billing"}
    assert record.environment.id not in json.dumps([s.model_dump() for s in record.before])

    twin = TwinReconciler(provider, record)
    assert twin.reconcile_once() == []
    _as_agent(cluster, record, "rollout", "restart", "deployment/api")
    assert any("rolled out shop/api revision 2" in a for a in twin.reconcile_once())
    changes = diff(record.before, provider.snapshot(record.environment, record.resources))
    replaced = {
        (d.kind, d.change) for d in changes if d.owner == "Deployment/api" and d.change != "unchanged"
    }
    assert replaced == {
        ("Pod", "deleted"),
        ("Pod", "created"),
        ("ReplicaSet", "created"),
        ("ReplicaSet", "modified"),
    }
    assert [(d.kind, d.name, d.change) for d in declared_changes(changes)] == [
        ("Deployment", "api", "modified")
    ]


def _set_condition(api: ApiClient, rec: SandboxRecord, node: str, kind: str, status: str) -> None:
    name = rec.environment.sandbox_object_name("Node", node)
    body = {"status": {"conditions": [{"type": kind, "status": status}]}}
    path = resource_path("Node", None, name) + "/status"
    request(api, "PATCH", path, body, content_type="application/strategic-merge-patch+json")


def _node_of(pod: dict[str, Any], rec: SandboxRecord) -> str | None:
    name = pod["spec"].get("nodeName")
    return rec.environment.declared_object_name("Node", name) if name else None


def test_new_pods_avoid_nodes_under_pressure_and_wait_when_none_fits(
    cluster: Cluster, api: ApiClient, provider: SandboxProvider, record: SandboxRecord
) -> None:
    ns = record.environment.sandbox_namespace("shop") or ""
    # Ready nodes carry no taint (not even the one NodeTaint admission puts on every new node).
    nodes = [s.object for s in record.before if s.kind == "Node"]
    assert [(n["metadata"]["name"], n["spec"].get("taints")) for n in nodes if n] == [
        ("node-1", None),
        ("node-2", None),
        ("node-3", None),
    ]
    twin = TwinReconciler(provider, record)
    twin.reconcile_once()
    _set_condition(api, record, "node-2", "DiskPressure", "True")
    _as_agent(cluster, record, "rollout", "restart", "deployment/api")
    twin.reconcile_once()
    placed = [_node_of(p, record) for p in _pods(api, ns, "api")]
    assert len(placed) == 3
    assert set(placed) == {"node-1", "node-3"}

    # No node left: node-1 stops being Ready, node-3 runs short of memory. A new replica waits.
    _set_condition(api, record, "node-1", "Ready", "False")
    _set_condition(api, record, "node-3", "MemoryPressure", "True")
    _as_agent(cluster, record, "scale", "deployment/api", "--replicas=4")
    actions = twin.reconcile_once()
    (waiting,) = [p for p in _pods(api, ns, "api") if not p["spec"].get("nodeName")]
    assert waiting["status"]["phase"] == "Pending"
    (scheduled,) = waiting["status"]["conditions"]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert scheduled["message"] == (
        "0/3 nodes are available: "
        "1 node(s) had taint {node.kubernetes.io/disk-pressure: }, that the pod didn't tolerate, "
        "1 node(s) had taint {node.kubernetes.io/memory-pressure: }, that the pod didn't tolerate, "
        "1 node(s) had taint {node.kubernetes.io/not-ready: }, that the pod didn't tolerate."
    )
    assert f"created pod shop/{waiting['metadata']['name']} (pending: {scheduled['message']})" in actions
    dep = request(api, "GET", resource_path("Deployment", ns, "api"))
    assert (dep["status"]["replicas"], dep["status"]["readyReplicas"]) == (4, 3)
    assert twin.reconcile_once() == []  # still nowhere to go: nothing changes

    # The disk pressure clears: the scheduler binds the waiting pod to node-2.
    _set_condition(api, record, "node-2", "DiskPressure", "False")
    assert twin.reconcile_once() == [
        f"scheduled pod shop/{waiting['metadata']['name']} on node-2",
        "updated status of deployment api",
    ]
    bound = request(api, "GET", resource_path("Pod", ns, waiting["metadata"]["name"]))
    assert (_node_of(bound, record), _ready(bound)) == ("node-2", True)
    dep = request(api, "GET", resource_path("Deployment", ns, "api"))
    assert dep["status"]["readyReplicas"] == 4
