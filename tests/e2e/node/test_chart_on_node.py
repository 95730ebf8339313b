"""The chart installed for real (Helm's Go SDK, not a dry run) onto the real node: the operator image runs
as the chart's Deployment's pod, and the kubelet's probes (liveness on /healthz, readiness on the gateway
port) make it Ready; `helm uninstall` then removes the pod from the node.

The sandbox is the plane itself (`sandbox.mode: host`), whose other nodes are kwok's: the chart's sandbox
control plane needs images of its own (docs/real-node.md, "Not proven here")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest

from oasis_operator.localcluster.node import NODE_NAME, RealNode
from tests.cluster_fixtures import Cluster, wait_for
from tests.e2e.node.support import ON_REAL_NODE, operator_image
from tests.unit.chart.chart_render import CHART, RELEASE


def chart_values(node: RealNode) -> dict[str, Any]:
    repository, tag = operator_image(node).rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "operator": {**ON_REAL_NODE},
        "sandbox": {"mode": "host"},
    }


@pytest.fixture
def helm_config(cluster: Cluster, namespace: str) -> Iterator[helm.Config]:
    config = helm.Config(kubeconfig_path=cluster.kubeconfig, namespace=namespace, storage_driver="secret")
    try:
        yield config
    finally:
        config.uninstall(RELEASE, ignore_not_found=True)
        config.close()


def _operator_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    selector = "app.kubernetes.io/component=operator"
    pods: list[dict[str, Any]] = json.loads(
        cluster.kubectl("-n", namespace, "get", "pods", "-l", selector, "-o", "json").stdout
    )["items"]
    return pods


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def test_the_charts_operator_pod_becomes_ready_through_its_probes_on_the_node(
    node: RealNode, cluster: Cluster, namespace: str, helm_config: helm.Config
) -> None:
    with helm.Chart.load(CHART) as chart:
        release = helm_config.install(chart, RELEASE, chart_values(node), namespace=namespace)
    assert release["status"] == "deployed"
    [pod] = wait_for(
        lambda: [p for p in _operator_pods(cluster, namespace) if _ready(p)] or None,
        timeout=120,
        interval=1,
        what="the chart's operator pod Ready",
    )
    assert pod["spec"]["nodeName"] == NODE_NAME
    [container] = pod["spec"]["containers"]
    assert container["image"] == operator_image(node)
    assert container["readinessProbe"]["tcpSocket"] == {"port": "gateway"}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    [status] = pod["status"]["containerStatuses"]
    assert status["ready"] is True
    assert status["restartCount"] == 0
    # The liveness probe was made by the kubelet (its user agent), and answered.
    name = pod["metadata"]["name"]

    def probed() -> bool:
        log = cluster.kubectl("-n", namespace, "logs", name).stdout
        return any(
            '"GET /healthz' in line and "kube-probe/1.37" in line and '" 200 ' in line
            for line in log.splitlines()
        )

    wait_for(
        probed, timeout=60, interval=2, what="a kubelet liveness probe answered 200 in the operator's log"
    )

    helm_config.uninstall(RELEASE)
    wait_for(lambda: not _operator_pods(cluster, namespace), timeout=60, interval=1, what="the pod gone")
