"""The chart installed onto the real node with its own sandbox control plane (`sandbox.mode: controlPlane`):
the session fixture `controlplane`, shared by the tier's tests of that mode (installed once, ~80 s).

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
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from oasis_operator.localcluster.components import REAL_NODE_LABEL
from oasis_operator.localcluster.node import NODE_IP, RealNode
from oasis_operator.localcluster.node_files import read_image_list
from tests.cluster_fixtures import KUBECTLS, REPO, Cluster, stop_process, wait_for
from tests.e2e.node.service_dns import ServiceDNS
from tests.e2e.node.support import ON_REAL_NODE, create, free_port, listening, operator_image
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
    forward: GatewayForward

    def pods(self, cluster: Cluster, component: str | None = None) -> list[dict[str, Any]]:
        """The release namespace's pods (of one app.kubernetes.io/component)."""
        selector = [f"--selector=app.kubernetes.io/component={component}"] if component else []
        out = cluster.kubectl("-n", self.release_namespace, "get", "pods", *selector, "-o", "json").stdout
        items: list[dict[str, Any]] = json.loads(out)["items"]
        return items

    def sandbox_kubectl(self, cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
        """kubectl against the sandbox API server as the operator (hack/sandbox-pki.sh's kubeconfig), from
        this host at the API server pod's address on the bridge, its certificate checked for its name."""
        [pod] = self.pods(cluster, "sandbox-apiserver")
        return subprocess.run(
            [KUBECTLS["server"], f"--kubeconfig={self.pki_dir / 'kubeconfig'}",
             f"--server=https://{pod['status']['podIP']}:6443",
             f"--tls-server-name={FULLNAME}-sandbox-apiserver.{self.release_namespace}.svc", *args],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip


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


class GatewayForward:
    """`kubectl port-forward` from the node's address to the gateway Service, started again whenever it
    exits: it forwards to one pod, and ends when that pod goes (an upgrade replaces the operator pod)."""

    def __init__(self, cluster: Cluster, namespace: str, port: int, log: Path) -> None:
        self._argv = [
            KUBECTLS["server"], f"--kubeconfig={cluster.kubeconfig}", "-n", namespace, "port-forward",
            f"--address={NODE_IP}", f"service/{FULLNAME}-gateway", f"{port}:443",
        ]  # fmt: skip
        self._log = log
        self._stopping = threading.Event()
        self._proc = self._start()
        self.starts = 1
        self._thread = threading.Thread(target=self._watch, name="gateway-forward", daemon=True)
        self._thread.start()

    def _start(self) -> subprocess.Popen[bytes]:
        with self._log.open("ab") as out:
            return subprocess.Popen(
                self._argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            if self._proc.poll() is not None and not self._stopping.is_set():
                self._proc = self._start()
                self.starts += 1

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        stop_process(self._proc)


@pytest.fixture(scope="session")
def controlplane(
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
    forward: GatewayForward | None = None
    try:
        with helm.Chart.load(CHART) as chart:
            assert config.install(chart, RELEASE, values, namespace=release_ns)["status"] == "deployed"
        cluster.kubectl("-n", release_ns, "rollout", "status", "statefulset", "--timeout=240s")
        cluster.kubectl("-n", release_ns, "rollout", "status", "deployment", "--timeout=240s")
        forward = GatewayForward(cluster, release_ns, gateway_port, work / "port-forward.log")
        wait_for(partial(listening, gateway_port), timeout=30, what="the gateway forwarded to the node")
        yield Platform(release_ns, gateway_port, work / "pki", dns, config, values, forward)
    finally:
        if forward is not None:
            forward.stop()
        try:
            config.uninstall(RELEASE, ignore_not_found=True)
            config.close()
            cluster.kubectl("delete", "namespace", release_ns, "--timeout=120s", check=False)
            cluster.kubectl("delete", "persistentvolume", volume, "--timeout=60s", check=False)
        finally:
            dns.stop()
