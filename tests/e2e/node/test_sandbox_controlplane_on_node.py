"""The chart's own sandbox control plane (`sandbox.mode: controlPlane`) runs as pods on the real node, and
an evaluation runs to its verdict against it: the careful reference agent PASSes, the reckless one FAILs.

What this needs of the node and the test (docs/real-node.md):
- the plane's images, built here from the release's cached binaries (hack/build-node-images.sh:
  `localhost/oasis/<component>:<version>`, `pullPolicy: Never`);
- the PKI Secret made by hack/sandbox-pki.sh, as docs/install.md tells a user;
- a PersistentVolume for etcd's claim (no storage provisioner runs here): a hostPath directory owned by the
  chart's uid, bound to the StatefulSet's claim by its claimRef;
- the release namespace's node selector and toleration (PodNodeSelector, PodTolerationRestriction): the
  chart has no placement values for the sandbox plane's pods, whose components would else go nowhere
  (the node is tainted);
- Service names: the components reach each other (etcd, the API server, the operator's audit webhook) by
  `<service>.<namespace>.svc`; the node has no CoreDNS or kube-proxy, so `service_dns.ServiceDNS` answers
  those names with the endpoints' pod addresses (the kubelet's clusterDNS is the node's address).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from oasis_operator.localcluster.components import REAL_NODE_LABEL
from oasis_operator.localcluster.node import NODE_IP, NODE_NAME, RealNode
from oasis_operator.localcluster.node_files import read_image_list
from tests.cluster_fixtures import KUBECTLS, REPO, Cluster, stop_process, wait_for
from tests.e2e.node.service_dns import ServiceDNS
from tests.e2e.node.support import (
    ON_REAL_NODE,
    SCENARIO,
    apply_as,
    create,
    evaluation,
    finished,
    free_port,
    listening,
    operator_image,
    spawn,
    tenant_kubeconfig,
)
from tests.unit.chart.chart_render import CHART, RELEASE

FULLNAME = f"{RELEASE}-oasis-operator"
COMPONENTS = ("sandbox-etcd", "sandbox-apiserver", "sandbox-controller-manager", "sandbox-scheduler",
              "sandbox-kwok")  # fmt: skip


@dataclass(frozen=True)
class Platform:
    release_namespace: str
    gateway_port: int
    pki_dir: Path
    dns: ServiceDNS
    config: helm.Config
    values: dict[str, Any]


def sandbox_images(node: RealNode) -> dict[str, dict[str, str]]:
    """The chart's image values of the sandbox plane, from the images the node imported."""
    refs = {ref.split("/")[-1].split(":")[0]: ref for ref, _ in read_image_list(node.image_dir)}
    wanted = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"}
    missing = sorted(wanted - set(refs))
    assert not missing, f"no sandbox images {missing} in {node.image_dir}: run hack/build-node-images.sh"

    def image(name: str) -> dict[str, str]:
        repository, tag = refs[name].rsplit(":", 1)
        return {"repository": repository, "tag": tag, "pullPolicy": "Never"}

    return {
        "etcd": image("etcd"),
        "apiServer": image("kube-apiserver"),
        "controllerManager": image("kube-controller-manager"),
        "scheduler": image("kube-scheduler"),
        "kwok": image("kwok"),
        "kubectl": image("kubectl"),
    }


def _etcd_volume(cluster: Cluster, namespace: str, path: Path) -> str:
    """A hostPath PersistentVolume for the etcd StatefulSet's claim, owned by the chart's uid."""
    path.mkdir(mode=0o700)
    os.chown(path, 65532, 65532)
    name = f"{namespace}-etcd"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": str(path), "type": "Directory"},
            "claimRef": {"namespace": namespace, "name": f"data-{FULLNAME}-sandbox-etcd-0"},
        },
    }
    create(cluster, namespace, volume)
    return name


@pytest.fixture(scope="module")
def platform(
    node: RealNode, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    """The chart installed onto the node with its own sandbox control plane, the gateway forwarded to the
    node's address, Service names answered by the test's DNS."""
    work = tmp_path_factory.mktemp("controlplane")
    release_ns = f"oasis-cp-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", release_ns)
    cluster.kubectl(
        "annotate", "namespace", release_ns,
        f"scheduler.alpha.kubernetes.io/node-selector={REAL_NODE_LABEL}=true",
        "scheduler.alpha.kubernetes.io/defaultTolerations="
        + json.dumps([{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]),
    )  # fmt: skip
    pki = subprocess.run(
        ["bash", str(REPO / "hack" / "sandbox-pki.sh"), FULLNAME, release_ns, str(work / "pki")],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    subprocess.run(
        [KUBECTLS["server"], f"--kubeconfig={cluster.kubeconfig}", "-n", release_ns, "apply", "-f", "-"],
        input=pki.stdout, capture_output=True, text=True, check=True,
    )  # fmt: skip
    volume = _etcd_volume(cluster, release_ns, work / "etcd")
    images = sandbox_images(node)
    gateway_port = free_port(NODE_IP)
    repository, tag = operator_image(node).rsplit(":", 1)
    values: dict[str, Any] = {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "operator": {**ON_REAL_NODE},
        "sandbox": {
            "mode": "controlPlane",
            "controlPlane": {
                "etcd": {"image": images["etcd"], "storage": {"size": "1Gi"}},
                "apiServer": {"image": images["apiServer"]},
                "controllerManager": {"image": images["controllerManager"]},
                "scheduler": {"image": images["scheduler"]},
                "kwok": {"image": images["kwok"], "kubectlImage": images["kubectl"]},
            },
        },
        "gateway": {"externalURL": f"https://{NODE_IP}:{gateway_port}"},
    }
    dns = ServiceDNS(cluster.kubeconfig, NODE_IP).start()
    config = helm.Config(kubeconfig_path=cluster.kubeconfig, namespace=release_ns, storage_driver="secret")
    forward: subprocess.Popen[bytes] | None = None
    try:
        with helm.Chart.load(CHART) as chart:
            assert config.install(chart, RELEASE, values, namespace=release_ns)["status"] == "deployed"
        cluster.kubectl("-n", release_ns, "rollout", "status", "statefulset", "--timeout=240s")
        cluster.kubectl("-n", release_ns, "rollout", "status", "deployment", "--timeout=240s")
        forward = spawn(
            [KUBECTLS["server"], f"--kubeconfig={cluster.kubeconfig}", "-n", release_ns, "port-forward",
             f"--address={NODE_IP}", f"service/{FULLNAME}-gateway", f"{gateway_port}:443"],
            work / "port-forward.log",
        )  # fmt: skip
        wait_for(partial(listening, gateway_port), timeout=30, what="the gateway forwarded to the node")
        yield Platform(release_ns, gateway_port, work / "pki", dns, config, values)
    finally:
        if forward is not None:
            stop_process(forward)
        try:
            config.uninstall(RELEASE, ignore_not_found=True)
            config.close()
            cluster.kubectl("delete", "namespace", release_ns, "--timeout=120s", check=False)
            cluster.kubectl("delete", "persistentvolume", volume, "--timeout=60s", check=False)
        finally:
            dns.stop()


def _pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(
        cluster.kubectl("-n", namespace, "get", "pods", "-o", "json").stdout
    )["items"]
    return items


def test_the_charts_sandbox_control_plane_runs_as_ready_pods_on_the_node(
    cluster: Cluster, platform: Platform
) -> None:
    pods = {
        p["metadata"]["labels"].get("app.kubernetes.io/component"): p
        for p in _pods(cluster, platform.release_namespace)
    }
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
            previous = cluster.kubectl("-n", platform.release_namespace, "logs", "--previous", "--tail=8",
                                       pods[component]["metadata"]["name"], check=False)  # fmt: skip
            print(component, "previous log:", previous.stdout[-2000:], previous.stderr[-500:])
    assert restarts["sandbox-etcd"] == [(0, "")], restarts
    # The components found each other by Service name, answered with the pods' addresses.
    ns = platform.release_namespace
    answered = platform.dns.answered
    assert answered.get((ns, f"{FULLNAME}-sandbox-etcd")) == [pods["sandbox-etcd"]["status"]["podIP"]]
    api_ip = pods["sandbox-apiserver"]["status"]["podIP"]
    assert answered.get((ns, f"{FULLNAME}-sandbox-apiserver")) == [api_ip]
    # The sandbox API server posts its audit to the operator's webhook, found by its Service name too.
    assert (ns, f"{FULLNAME}-audit") in answered, sorted(answered)


def test_evaluations_reach_their_verdicts_against_the_charts_sandbox_control_plane(
    cluster: Cluster, platform: Platform, agents: dict[str, int], namespace: str, tmp_path: Path
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
    print(json.dumps({"careful": careful, "reckless": reckless}, indent=1)[:6000])
