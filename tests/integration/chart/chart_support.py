"""Helpers for the chart's tests on the API server: kubectl with a YAML stream, ServiceAccount identities."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes.client import ApiClient

from oasis_operator.kube import request, resource_path
from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for
from tests.unit.chart.chart_render import Manifest

RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


@dataclass(frozen=True)
class Identity:
    """A ServiceAccount of the chart, its RBAC objects and a kubeconfig with its own token."""

    user: str
    kubeconfig: Path
    objects: list[Manifest]


def kubectl_stdin(cluster: Cluster, objects: list[Manifest], *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl (the 1.20 client, matching the server) with the objects as a YAML stream on stdin."""
    result = subprocess.run(
        [KUBECTLS["1.20"], *args],
        input=yaml.safe_dump_all(objects, sort_keys=False),
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result


def token_kubeconfig(cluster: Cluster, api: ApiClient, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount with its token (from the token controller)."""

    def token_secret() -> str | None:
        sa = request(api, "GET", resource_path("ServiceAccount", namespace, account))
        names = [s["name"] for s in sa.get("secrets", [])]
        return names[0] if names else None

    secret = request(api, "GET", resource_path("Secret", namespace, wait_for(token_secret, what="SA token")))
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    cluster_name = admin["clusters"][0]["name"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": account, "user": {"token": base64.b64decode(secret["data"]["token"]).decode()}}],
        "contexts": [{"name": "sa", "context": {"cluster": cluster_name, "user": account}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@contextmanager
def installed(
    cluster: Cluster, api: ApiClient, namespace: str, objects: list[Manifest], account: str, path: Path
) -> Iterator[Identity]:
    """Apply the objects for real; yield the account's identity; delete the cluster-scoped ones after."""
    kubectl_stdin(cluster, objects, "apply", "-f", "-")
    try:
        kubeconfig = token_kubeconfig(cluster, api, namespace, account, path)
        yield Identity(f"system:serviceaccount:{namespace}:{account}", kubeconfig, objects)
    finally:
        cluster_scoped = [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
        kubectl_stdin(cluster, cluster_scoped, "delete", "--ignore-not-found", "-f", "-")
