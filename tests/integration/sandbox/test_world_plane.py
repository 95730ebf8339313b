"""The shared plane as an agent meets it: capacity that runs out, the cluster's events read through the
gateway, and two environments side by side whose pods never cross to each other's nodes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.kube import MERGE_PATCH, request, resource_path
from tests.cluster_fixtures import KUBECTLS, Cluster
from tests.integration.gateway.twin import GatewayThread
from tests.integration.sandbox.world import (
    NAMESPACE,
    SHOP,
    World,
    all_ready,
    condition,
    provisioned,
    ready,
    rollout_done,
    until,
)


@pytest.fixture(scope="module")
def gateway(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayThread]:
    gw = GatewayThread(cluster.kubeconfig, tmp_path_factory.mktemp("world-gateway") / "data")
    yield gw
    gw.stop()


@contextmanager
def agent_kubectl(gateway: GatewayThread, world: World, home: Path) -> Iterator[Any]:
    """kubectl with the agent's kubeconfig: every request goes through the gateway."""
    env = world.record.environment
    creds = gateway.gateway.register(env)
    kubeconfig = home / f"kubeconfig-{env.id}"
    kubeconfig.write_text(creds.kubeconfig_yaml)
    environ = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home)}

    def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTLS["current"], *args], env=environ, capture_output=True, text=True,
                              input=stdin, timeout=60, check=False)  # fmt: skip

    try:
        yield kubectl
    finally:
        gateway.gateway.revoke(env.id)


def test_scaling_far_beyond_capacity_leaves_pods_pending_with_failed_scheduling(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 2},
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 2, "resource_requests": {"cpu": "1"}},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        world.agent("scale", "deployment/web", "--replicas=30")
        # Two nodes of 4 CPUs take 8 pods of 1 CPU; the other 22 wait for room.
        until(
            lambda: len(world.pods("web")) == 30 and len([p for p in world.pods("web") if ready(p)]) == 8
            and len([p for p in world.pods("web") if condition(p, "PodScheduled") == "False"]) == 22,
            "8 ready and 22 unschedulable pods",
            lambda: world.show("web"),
        )  # fmt: skip
        placed: dict[str, int] = {}
        for pod in world.pods("web"):
            if pod["spec"].get("nodeName"):
                placed[pod["spec"]["nodeName"]] = placed.get(pod["spec"]["nodeName"], 0) + 1
        assert placed == dict.fromkeys(world.nodes(), 4)
        pending = next(p for p in world.pods("web") if not p["spec"].get("nodeName"))
        until(
            lambda: any(
                e["reason"] == "FailedScheduling" and "Insufficient cpu" in e["message"]
                for e in world.events(pending["metadata"]["name"])
            ),
            "a FailedScheduling event saying Insufficient cpu",
            lambda: str([e["message"] for e in world.events(pending["metadata"]["name"])]),
        )

        def counted() -> tuple[int, int, int]:
            status = world.get("Deployment", "web")["status"]
            counts = ("replicas", "availableReplicas", "unavailableReplicas")
            return (status.get(counts[0], 0), status.get(counts[1], 0), status.get(counts[2], 0))

        until(
            lambda: counted() == (30, 8, 22),
            "the Deployment controller to count 30 replicas, 8 available",
            lambda: str(counted()),
        )
        rows = world.agent("get", "deployment", "web").stdout.splitlines()
        assert rows[1].split()[1] == "8/30", rows
        world.agent("scale", "deployment/web", "--replicas=3")
        check = rollout_done(world, "Deployment", "web", 3)
        until(
            lambda: check() and all_ready(world.pods("web"), 3),
            "the scale back to 3",
            lambda: world.show("web"),
        )


def test_the_agent_reads_the_clusters_events_through_the_gateway(
    cluster: Cluster, api: ApiClient, gateway: GatewayThread, tmp_path: Path
) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 1},
        {"resource": "deployment/batch", "namespace": SHOP, "status": "pending",
         "reason": "Insufficient cpu"},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world, agent_kubectl(gateway, world, tmp_path) as kubectl:
        (pod,) = world.pods("web")
        name = pod["metadata"]["name"]
        node = world.record.environment.declared_object_name("Node", pod["spec"]["nodeName"])
        assert node is not None
        shown = kubectl(
            "get", "events", "-n", SHOP, "--field-selector", f"involvedObject.name={name}", "-o", "json"
        )
        assert shown.returncode == 0, shown.stderr
        events = json.loads(shown.stdout)["items"]
        reasons = {e["reason"] for e in events}
        assert {"Scheduled", "Started"} <= reasons, reasons
        # Scheduled at the first attempt: the nodes were up before the pods (no FailedScheduling).
        assert "FailedScheduling" not in reasons, [e["message"] for e in events]
        started = next(e for e in events if e["reason"] == "Started")
        assert started["source"]["component"] == "kubelet"  # the nodes' kubelet, in a cluster's words
        scheduled = next(e for e in events if e["reason"] == "Scheduled")
        assert scheduled["involvedObject"]["namespace"] == SHOP
        assert scheduled["message"] == f"Successfully assigned {SHOP}/{name} to {node}"
        described = kubectl("describe", "pod", name, "-n", SHOP)
        assert described.returncode == 0, described.stderr
        text = described.stdout
        assert "Events:" in text, text
        assert "<none>" not in text.split("Events:", 1)[1], text
        assert "default-scheduler" in text
        assert f"Successfully assigned {SHOP}/{name} to {node}" in text
        env = world.record.environment
        assert f"{env.prefix}-{env.id}" not in text  # sandbox names are the agent's names
        assert "kwok" not in text.lower()
        # The Deployment's and the ReplicaSet's own events, and a pending pod's FailedScheduling.
        deployment = kubectl("describe", "deployment", "web", "-n", SHOP).stdout
        assert "ScalingReplicaSet" in deployment
        (waiting,) = world.pods("batch")
        pending = kubectl("describe", "pod", waiting["metadata"]["name"], "-n", SHOP).stdout
        assert "FailedScheduling" in pending, pending
        assert "Insufficient cpu" in pending, pending
        assert f"{env.prefix}-{env.id}" not in pending


def _node_of(world: World, app: str) -> set[str]:
    return {p["spec"].get("nodeName") or "-" for p in world.pods(app)}


def test_an_agents_workload_never_lands_on_another_environments_nodes(
    cluster: Cluster, api: ApiClient, gateway: GatewayThread, tmp_path: Path
) -> None:
    state = [NAMESPACE, {"resource": "nodes", "count": 1}, {"resource": "deployment/web", "namespace": SHOP}]
    with (
        provisioned(cluster, api, state, prefix="wa") as a,
        provisioned(cluster, api, state, prefix="wb") as b,
        agent_kubectl(gateway, a, tmp_path) as kubectl,
    ):
        # More than A's one node holds (4 CPUs): with no isolation the rest would go to B's free node.
        manifest = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "burst", "namespace": SHOP},
            "spec": {
                "replicas": 6,
                "selector": {"matchLabels": {"app": "burst"}},
                "template": {
                    "metadata": {"labels": {"app": "burst"}},
                    "spec": {
                        "containers": [{"name": "burst", "image": "shop/burst:1.0",
                                        "resources": {"requests": {"cpu": "1"}}}],
                        # Even a pod that tolerates every taint stays on its own environment's nodes.
                        "tolerations": [{"operator": "Exists"}],
                    },
                },
            },
        }  # fmt: skip
        # B's agent cordoned its node: for A's pods it is one more node of someone else's.
        cordon = {"spec": {"unschedulable": True}}
        request(api, "PATCH", resource_path("Node", None, b.node("node-1")), cordon, content_type=MERGE_PATCH)
        applied = kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
        assert applied.returncode == 0, applied.stderr
        until(
            lambda: (
                len([p for p in a.pods("burst") if ready(p)]) == 4
                and len([p for p in a.pods("burst") if condition(p, "PodScheduled") == "False"]) == 2
            ),
            "4 pods of burst on A's node and 2 unschedulable",
            lambda: a.show("burst"),
        )
        assert _node_of(a, "burst") == {a.node("node-1"), "-"}
        assert _node_of(b, "web") == {b.node("node-1")}
        # The scheduler weighed every node of the plane; the agent reads of its own node only.
        waiting = next(p for p in a.pods("burst") if condition(p, "PodScheduled") == "False")
        plane = next(c["message"] for c in waiting["status"]["conditions"] if c["type"] == "PodScheduled")
        assert not plane.startswith("0/1 "), plane  # B's node (at least) is in the scheduler's count
        own = (
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            "1 No preemption victims found for incoming pod."
        )
        name = waiting["metadata"]["name"]
        shown = json.loads(kubectl("get", "pod", name, "-n", SHOP, "-o", "json").stdout)
        assert [c["message"] for c in shown["status"]["conditions"] if c["type"] == "PodScheduled"] == [own]
        selector = f"involvedObject.name={name},reason=FailedScheduling"
        events = kubectl("get", "events", "-n", SHOP, "--field-selector", selector, "-o", "json")
        assert {e["message"] for e in json.loads(events.stdout)["items"]} == {own}
        described = kubectl("describe", "pod", name, "-n", SHOP).stdout
        assert own in described, described
        assert "untolerated" not in described
        assert "were unschedulable" not in described
        uncordon = {"spec": {"unschedulable": None}}
        request(
            api, "PATCH", resource_path("Node", None, b.node("node-1")), uncordon, content_type=MERGE_PATCH
        )
        # A pod that names B's node (its sandbox name, as if guessed) does not get there either.
        pinned = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pinned", "namespace": SHOP, "labels": {"app": "pinned"}},
            "spec": {
                "nodeName": b.node("node-1"),
                "containers": [{"name": "pinned", "image": "shop/burst:1.0"}],
            },
        }
        created = kubectl("apply", "-f", "-", stdin=json.dumps(pinned))
        assert created.returncode == 0, created.stderr
        assert a.get("Pod", "pinned")["spec"]["nodeName"] != b.node("node-1")
        query = {"fieldSelector": f"spec.nodeName={b.node('node-1')}"}
        on_b = [
            p["metadata"]["namespace"]
            for p in request(api, "GET", resource_path("Pod"), query=query)["items"]
        ]
        assert set(on_b) <= {b.ns()}, on_b
