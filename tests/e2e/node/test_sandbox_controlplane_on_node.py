"""The chart's own sandbox control plane (`sandbox.mode: controlPlane`) runs as pods on the real node, and
evaluations run to their verdicts against it: the careful reference agent PASSes, the reckless one FAILs.
How it is installed (images, PKI, etcd's volume, Service names): tests/e2e/node/controlplane.py.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from oasis_operator.localcluster.node import NODE_IP, NODE_NAME
from tests.cluster_fixtures import Cluster, wait_for
from tests.e2e.node.controlplane import COMPONENTS, FULLNAME, Platform
from tests.e2e.node.support import SCENARIO, apply_as, evaluation, finished, tenant_kubeconfig


def test_the_charts_sandbox_control_plane_runs_as_ready_pods_on_the_node(
    cluster: Cluster, controlplane: Platform
) -> None:
    pods = {p["metadata"]["labels"].get("app.kubernetes.io/component"): p for p in controlplane.pods(cluster)}
    assert set(COMPONENTS) <= set(pods), sorted(pods)
    restarts = {}
    for component in COMPONENTS:
        pod = pods[component]
        ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert ready.get("Ready") == "True", (component, pod["status"])
        assert pod["spec"]["nodeName"] == NODE_NAME, component
        images = {s["image"] for s in pod["status"]["containerStatuses"]}
        assert all(i.startswith("localhost/oasis/") for i in images), (component, images)
        restarts[component] = [
            (s["restartCount"], (s.get("lastState") or {}).get("terminated", {}).get("message", "")[-300:])
            for s in pod["status"]["containerStatuses"]
        ]
    # etcd depends on nothing and runs from the start; the others may have exited while the API server
    # came up (the controller manager does, when it cannot reach it in time), and the kubelet restarts them.
    print("restarts", json.dumps(restarts, indent=1))
    for component, counts in restarts.items():
        if any(count for count, _ in counts):
            previous = cluster.kubectl("-n", controlplane.release_namespace, "logs", "--previous", "--tail=8",
                                       pods[component]["metadata"]["name"], check=False)  # fmt: skip
            print(component, "previous log:", previous.stdout[-2000:], previous.stderr[-500:])
    assert restarts["sandbox-etcd"] == [(0, "")], restarts
    # The components found each other by Service name, answered with the pods' addresses.
    ns = controlplane.release_namespace
    answered = controlplane.dns.answered
    assert answered.get((ns, f"{FULLNAME}-sandbox-etcd")) == [pods["sandbox-etcd"]["status"]["podIP"]]
    api_ip = pods["sandbox-apiserver"]["status"]["podIP"]
    assert answered.get((ns, f"{FULLNAME}-sandbox-apiserver")) == [api_ip]
    # The sandbox API server posts its audit to the operator's webhook, found by its Service name too.
    assert (ns, f"{FULLNAME}-audit") in answered, sorted(answered)


def test_evaluations_reach_their_verdicts_against_the_charts_sandbox_control_plane(
    cluster: Cluster, controlplane: Platform, agents: dict[str, int], namespace: str, tmp_path: Path
) -> None:
    tenant = tenant_kubeconfig(cluster, namespace, tmp_path)
    for policy, port in agents.items():
        apply_as(
            tenant,
            namespace,
            evaluation(policy, {"http": {"url": f"http://{NODE_IP}:{port}", "timeoutSeconds": 120}}),
        )
    careful = wait_for(
        partial(finished, cluster, namespace, "careful"), timeout=300, interval=2, what="careful's verdict"
    )
    reckless = wait_for(
        partial(finished, cluster, namespace, "reckless"), timeout=300, interval=2, what="reckless's verdict"
    )
    assert (careful["phase"], careful["summary"]["safety"]) == ("Completed", "PASS"), careful
    assert (reckless["phase"], reckless["summary"]["safety"]) == ("Completed", "FAIL"), reckless
    assert [(s["id"], s["result"]) for s in careful["scenarios"]] == [(SCENARIO, "PASS")]
    assert [(s["id"], s["result"]) for s in reckless["scenarios"]] == [(SCENARIO, "FAIL")]
    # The sandbox was the chart's API server, in its pod on the node.
    assert careful["sandboxServer"].startswith("kube-apiserver v1.37.2")
