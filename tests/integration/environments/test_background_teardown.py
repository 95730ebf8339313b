"""Sandboxes queued for background removal survive nothing: a runner killed mid-teardown leaks none.

A child process runs three scenarios, its first removal stopped halfway and two more queued, and is
killed with SIGKILL. What it left is found again the way the operator finds it after a restart: by the
evaluation's own sweep when the evaluation still exists (resume), and by the orphan collection at
start-up when it is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from kubernetes.client import ApiClient

from oasis_operator.controllers.sandbox_gc import evaluation_exists
from oasis_operator.environments.runtime import SandboxTarget
from oasis_operator.evaluation.cleanup import teardown_for
from oasis_operator.gateway import Gateway
from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider
from tests.cluster_fixtures import REPO, Cluster, wait_for

KINDS = ("Namespace", "ClusterRole", "ClusterRoleBinding", "Node", "PersistentVolume")


def left_of(api: ApiClient, env_ids: list[str]) -> list[str]:
    """Every namespace and cluster-scoped object still carrying one of the environments' label."""
    found = []
    for env_id in env_ids:
        query = {"labelSelector": f"{ENV_LABEL}={env_id}"}
        for kind in KINDS:
            items = request(api, "GET", resource_path(kind), query=query)["items"]
            found += [f"{kind}/{i['metadata']['name']}" for i in items]
    return found


def kill_mid_teardown(cluster: Cluster, tmp_path: Path, evaluation: str, prefix: str) -> list[str]:
    """Run the child until its teardown stalls with more queued, SIGKILL it; its environment ids."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.environments.teardown_child", str(cluster.kubeconfig),
         str(tmp_path), evaluation, prefix],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    guard = threading.Timer(600, child.kill)  # a stuck child fails the test instead of hanging it
    guard.start()
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
    finally:
        guard.cancel()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert line[:1] == ["READY"], f"the child ended before its teardown stalled: {line}"
    assert int(line[1]) == 3, "one removal stalled halfway and two queued behind it"
    return line[2:]


def test_a_resumed_evaluation_removes_what_a_killed_teardown_left(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    evaluation, prefix = f"tests/resumed-{uuid.uuid4().hex[:6]}", "kr"
    envs = kill_mid_teardown(cluster, tmp_path, evaluation, prefix)
    provider = SandboxProvider(api, prefix=prefix)
    assert sorted(provider.environments_of(evaluation)) == sorted(envs), "the kill left all three"
    gateway = Gateway(cluster.kubeconfig, tmp_path / "restarted-gateway")
    target = SandboxTarget(api, provider, gateway, prefix, None, "test sandbox")
    assert teardown_for(target, evaluation) == 3  # the sweep EvaluationService runs on resume
    teardown_for(target, evaluation)  # a second sweep meets terminating namespaces: no 409 may escape
    wait_for(lambda: not left_of(api, envs), timeout=300, interval=1, what="the sandboxes to be gone")


def test_the_orphan_collector_removes_what_a_killed_teardown_left(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    evaluation, prefix = f"gone-{uuid.uuid4().hex[:6]}/deleted", "ko"
    envs = kill_mid_teardown(cluster, tmp_path, evaluation, prefix)
    assert left_of(api, envs), "the kill left sandboxes behind"
    provider = SandboxProvider(api, prefix=prefix)
    reports = provider.collect_orphans(lambda ref: evaluation_exists(api, ref))  # as at start-up
    assert sorted(r.environment_id for r in reports) == sorted(envs)
    wait_for(lambda: not left_of(api, envs), timeout=300, interval=1, what="the sandboxes to be gone")
