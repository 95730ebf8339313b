"""A real node in the local plane: registered by its kubelet, left alone by kwok, running pods through
containerd, with logs and exec served through the API server and the API server reachable from a pod."""

from __future__ import annotations

import json
import time

from kubernetes.client import ApiClient

from oasis_operator.localcluster.components import REAL_NODE_LABEL
from oasis_operator.localcluster.node import NODE_IP, NODE_NAME, RealNode
from oasis_operator.sandbox.kwok import ensure_lifecycle
from tests.cluster_fixtures import Cluster, wait_for
from tests.e2e.node.support import create, pod, python_pod, wait_phase


def test_the_node_is_ready_labelled_tainted_and_runs_containerd_not_kwok(
    node: RealNode, cluster: Cluster
) -> None:
    doc = json.loads(cluster.kubectl("get", "node", NODE_NAME, "-o", "json").stdout)
    info = doc["status"]["nodeInfo"]
    # The kubelet's own report: kwok would write its fake runtime and version over these.
    assert info["containerRuntimeVersion"] == "containerd://1.6.20"
    assert info["kubeletVersion"] == "v1.37.2"
    assert doc["metadata"]["labels"][REAL_NODE_LABEL] == "true"
    assert {"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"} in doc["spec"]["taints"]
    assert {"type": "InternalIP", "address": NODE_IP} in doc["status"]["addresses"]
    [ready] = [c for c in doc["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")


def test_kwok_still_plays_a_node_without_the_real_node_label(
    node: RealNode, cluster: Cluster, api: ApiClient
) -> None:
    ensure_lifecycle(api)  # the Stages kwok moves nodes through (the sandbox provider's)
    name = "kwok-beside-the-real-node"
    twin = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"type": "kwok"}}}
    create(cluster, "default", twin)
    try:

        def kwok_ready() -> bool:
            doc = json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)
            return any(
                c["type"] == "Ready" and c["status"] == "True" for c in doc["status"].get("conditions", [])
            )

        wait_for(kwok_ready, timeout=30, what="kwok to make its node Ready")
    finally:
        cluster.kubectl("delete", "node", name, "--wait=false")


def test_a_pod_runs_on_the_node_and_its_log_is_read_through_the_api_server(
    node: RealNode, cluster: Cluster, namespace: str
) -> None:
    create(
        cluster,
        namespace,
        python_pod(node, "hello", "import os; print('hello from', os.getuid())", restartPolicy="Never"),
    )
    done = wait_phase(cluster, namespace, "hello", {"Succeeded", "Failed"})
    assert done["status"]["phase"] == "Succeeded"
    assert done["spec"]["nodeName"] == NODE_NAME
    assert done["status"]["podIP"].startswith("10.231.0.")
    assert cluster.kubectl("-n", namespace, "logs", "hello").stdout == "hello from 65532\n"


def test_exec_through_the_api_server_runs_in_the_container(
    node: RealNode, cluster: Cluster, namespace: str
) -> None:
    create(cluster, namespace, python_pod(node, "sleeper", "import time; time.sleep(600)"))
    wait_phase(cluster, namespace, "sleeper", {"Running"})
    out = cluster.kubectl(
        "-n",
        namespace,
        "exec",
        "sleeper",
        "--",
        "python3",
        "-c",
        "import os; print(os.getuid(), os.getpid())",
    )
    assert out.stdout.split() == ["65532", out.stdout.split()[1]]
    assert (
        int(out.stdout.split()[1]) > 1
    )  # a process beside the container's first one, inside its PID namespace


def test_a_pod_reaches_the_api_server_at_the_kubernetes_service(
    node: RealNode, cluster: Cluster, namespace: str
) -> None:
    code = (
        "import os, ssl, urllib.request\n"
        "sa = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
        "ctx = ssl.create_default_context(cafile=sa + 'ca.crt')\n"
        "host, port = os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT']\n"
        "ns = open(sa + 'namespace').read()\n"
        "url = 'https://%s:%s/api/v1/namespaces/%s/serviceaccounts/default' % (host, port, ns)\n"
        "auth = {'Authorization': 'Bearer ' + open(sa + 'token').read()}\n"
        "req = urllib.request.Request(url, headers=auth)\n"
        "try:\n"
        "    urllib.request.urlopen(req, context=ctx, timeout=10)\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(os.environ['KUBERNETES_SERVICE_HOST'], e.code)\n"
    )
    create(cluster, namespace, python_pod(node, "client", code, restartPolicy="Never"))
    done = wait_phase(cluster, namespace, "client", {"Succeeded", "Failed"})
    log = cluster.kubectl("-n", namespace, "logs", "client").stdout
    assert done["status"]["phase"] == "Succeeded", log
    # The API server answered as the pod's ServiceAccount (authenticated by its token, refused by RBAC):
    # reached at the Service's address, verified by the cluster's CA.
    assert log == "10.96.0.1 403\n"


def test_a_pod_without_the_toleration_is_not_scheduled_on_the_real_node(
    node: RealNode, cluster: Cluster, namespace: str
) -> None:
    manifest = python_pod(node, "untolerated", "print(1)", tolerations=[])
    create(cluster, namespace, manifest)
    time.sleep(3)
    doc = pod(cluster, namespace, "untolerated")
    assert "nodeName" not in doc["spec"]
    [scheduled] = [c for c in doc["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled["reason"] == "Unschedulable"
    # The pod selects the real node (its label), whose taint is what keeps the pod off it.
    assert "1 node(s) had untolerated taint(s)" in scheduled["message"]
