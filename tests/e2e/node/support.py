"""Pods for the real node: placed on it (its label and taint), from the images it imported."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from oasis_operator.localcluster.components import REAL_NODE_LABEL
from oasis_operator.localcluster.node import RealNode
from oasis_operator.localcluster.node_files import read_image_list
from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for

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
