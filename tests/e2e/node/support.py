"""Pods for the real node: placed on it (its label and taint), from the images it imported; and what the
tests of evaluations on the node share (the agents' ports, a tenant's kubeconfig, an evaluation)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

from oasis_operator.kube import api_client
from oasis_operator.localcluster.components import REAL_NODE_LABEL
from oasis_operator.localcluster.node import NODE_IP, RealNode
from oasis_operator.localcluster.node_files import read_image_list
from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for
from tests.integration.chart.chart_support import token_kubeconfig

SCENARIO = "infra.safety.be.zone-violation-001"

ON_REAL_NODE: dict[str, Any] = {
    "nodeSelector": {REAL_NODE_LABEL: "true"},
    "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
}


def operator_image(node: RealNode) -> str:
    """The operator image the node imported (it has python3: the tests' plain pods run it too)."""
    [ref] = [ref for ref, _ in read_image_list(node.image_dir) if ref.startswith("localhost/oasis-operator:")]
    return ref


def python_pod(node: RealNode, name: str, code: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            **ON_REAL_NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": operator_image(node),
                    "imagePullPolicy": "Never",
                    "command": ["python3", "-c", code],
                }
            ],
            **spec,
        },
    }


def create(cluster: Cluster, namespace: str, manifest: dict[str, Any]) -> None:
    subprocess.run(
        [KUBECTLS["server"], f"--kubeconfig={cluster.kubeconfig}", "-n", namespace, "create", "-f", "-"],
        input=json.dumps(manifest),
        text=True,
        check=True,
        capture_output=True,
    )


def pod(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        cluster.kubectl("-n", namespace, "get", "pod", name, "-o", "json").stdout
    )
    return doc


def wait_phase(
    cluster: Cluster, namespace: str, name: str, phases: set[str], timeout: float = 60
) -> dict[str, Any]:
    found: dict[str, Any] = wait_for(
        lambda: (p := pod(cluster, namespace, name))["status"].get("phase") in phases and p,
        timeout=timeout,
        interval=0.5,
        what=f"pod {name} in phase {sorted(phases)}",
    )
    return found


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=os.environ
        )


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((NODE_IP, port)) == 0


def tenant_kubeconfig(cluster: Cluster, namespace: str, tmp_path: Path) -> Path:
    """A ServiceAccount of the tenant's namespace with the namespace's `edit` role (which the chart's
    oasis-evaluation-edit aggregates into), authenticated by its own token."""
    cluster.kubectl("-n", namespace, "create", "serviceaccount", "tenant")
    cluster.kubectl("-n", namespace, "create", "rolebinding", "tenant-edit", "--clusterrole=edit",
                    f"--serviceaccount={namespace}:tenant")  # fmt: skip
    api = api_client(cluster.kubeconfig)
    try:
        return token_kubeconfig(cluster, api, namespace, "tenant", tmp_path / "tenant.kubeconfig")
    finally:
        api.close()  # type: ignore[no-untyped-call]


def evaluation(name: str, agent: dict[str, Any], scenarios: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "oasis.evaluation.dev/v1alpha1",
        "kind": "OASISEvaluation",
        "metadata": {"name": name},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": {"name": name, **agent},
            "scenarios": {"ids": scenarios or [SCENARIO]},
        },
    }


def apply_as(kubeconfig: Path, namespace: str, manifest: dict[str, Any]) -> None:
    applied = subprocess.run(
        [KUBECTLS["server"], f"--kubeconfig={kubeconfig}", "-n", namespace, "create", "-f", "-"],
        input=json.dumps(manifest), text=True, capture_output=True, check=False,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr


def finished(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    out = cluster.kubectl("-n", namespace, "get", "oasisevaluation", name, "-o", "json").stdout
    status: dict[str, Any] = json.loads(out).get("status") or {}
    return status if status.get("phase") in ("Completed", "Failed", "Aborted") else None
