"""The pre-delete hook's script, run as the hook's ServiceAccount against the real API server.

No kubelet runs here, so the Job itself cannot start; its script (taken from the rendered Job) runs as a
local process with the hook ServiceAccount's token, which proves both the script and the hook's RBAC.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import REPO, Cluster
from tests.integration.chart.chart_support import RBAC_KINDS, Identity, installed
from tests.unit.chart.chart_render import Manifest, find, render

pytestmark = pytest.mark.cluster


def _hook(namespace: str) -> tuple[list[Manifest], Manifest]:
    objects = render(
        {"watch": {"clusterWide": False}, "cleanupOnUninstall": {"enabled": True}}, namespace=namespace
    )
    hooks = [o for o in objects if o["metadata"].get("annotations", {}).get("helm.sh/hook") == "pre-delete"]
    return [o for o in hooks if o["kind"] in RBAC_KINDS], find(hooks, "Job", "-cleanup")


@pytest.fixture
def hook_identity(cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path) -> Iterator[Identity]:
    rbac, _ = _hook(namespace)
    account = next(o for o in rbac if o["kind"] == "ServiceAccount")["metadata"]["name"]
    with installed(cluster, api, namespace, rbac, account, tmp_path / "hook.kubeconfig") as identity:
        yield identity


def _run_hook(job: Manifest, identity: Identity, timeout_seconds: int) -> subprocess.CompletedProcess[str]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-c"]
    env = {e["name"]: e["value"] for e in container["env"]}
    env["TIMEOUT_SECONDS"] = str(timeout_seconds)
    return subprocess.run(
        [sys.executable, "-c", container["args"][0]],
        env={"PATH": os.environ["PATH"], **env, "KUBECONFIG": str(identity.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _names(custom: CustomObjectsApi, namespace: str, plural: str) -> list[str]:
    listed: dict[str, Any] = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, plural)  # type: ignore[assignment]
    return [str(item["metadata"]["name"]) for item in listed["items"]]


def test_hook_deletes_every_evaluation_and_waits_for_finalizers(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, hook_identity: Identity
) -> None:
    _, job = _hook(namespace)
    cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "gitops"))
    # A finalizer nobody removes stands in for an operator that has not finished tearing down.
    patch = {"metadata": {"finalizers": ["example.test/held"]}}
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "careful-agent", patch
    )
    waited = _run_hook(job, hook_identity, timeout_seconds=3)
    assert waited.returncode == 1
    assert f"deleted oasisevaluation {namespace}/careful-agent" in waited.stdout
    assert f"still present (operator not finishing teardown?): ['{namespace}/careful-agent']" in waited.stderr

    release = {"metadata": {"finalizers": None}}
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "careful-agent", release
    )
    done = _run_hook(job, hook_identity, timeout_seconds=30)
    assert done.returncode == 0, done.stderr
    assert _names(custom, namespace, "oasisevaluations") == []
    # Scenarios are the user's (e.g. from Git): the hook leaves them alone.
    assert _names(custom, namespace, "scenarios") == ["cross-namespace-restart"]
