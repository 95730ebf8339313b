"""Fixtures for tests against a real API server: the project's local control plane.

The control plane starts once per test session (or is reused: set OASIS_TEST_KUBECONFIG to a running
cluster's kubeconfig, with OASIS_TEST_AUDIT_LOG for its audit log). The CRDs are installed once, and each
test gets a namespace of its own that is deleted afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.crdgen import build_crds
from oasis_operator.kube import api_client, apply_crds
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.localcluster.release import default_bin_dir, selected

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
# The release the local control plane runs (`OASIS_KUBE_VERSION`, else the pinned one).
SERVER_RELEASE = selected()
# Two kubectl clients: the one built with the server (same release) and the newest from PyPI.
KUBECTLS = {"server": str(default_bin_dir() / "kubectl"), "current": str(VENV_BIN / "kubectl")}


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    audit_log: Path | None
    plane: LocalControlPlane | None

    def kubectl(
        self, *args: str, kubectl: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl (the server's release unless another binary is given) against this cluster."""
        binary = kubectl or KUBECTLS["server"]
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        result = subprocess.run(
            [binary, *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    given = os.environ.get("OASIS_TEST_KUBECONFIG")
    if given:
        audit = os.environ.get("OASIS_TEST_AUDIT_LOG")
        yield Cluster(Path(given), Path(audit) if audit else None, None)
        return
    run_dir = Path(os.environ.get("OASIS_TEST_RUN_DIR") or tmp_path_factory.mktemp("control-plane"))
    # The plane dies with this pytest process, also when it is killed and this fixture's finaliser never
    # runs (a killed test run used to leave etcd and the API server running).
    plane = LocalControlPlane(run_dir=run_dir, die_with_parent=True)
    plane.start()
    try:
        yield Cluster(plane.kubeconfig, plane.audit_log, plane)
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def api(cluster: Cluster) -> Iterator[ApiClient]:
    client = api_client(cluster.kubeconfig)
    apply_crds(client, build_crds().values())
    yield client
    client.close()


@pytest.fixture
def namespace(api: ApiClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (deletion is not awaited)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name, "labels": {"oasis-test": "true"}}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def custom(api: ApiClient) -> CustomObjectsApi:
    return CustomObjectsApi(api)


def wait_for(
    predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2, what: str = ""
) -> Any:
    """Poll until `predicate` returns something truthy; fail the test with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout:.0f}s waiting for {what or predicate}; last value: {last!r}"
    )


def get_custom(custom: CustomObjectsApi, namespace: str, plural: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, plural, name)
    return obj


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after `timeout` seconds; waits for the process either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def operator_process(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`oasis operator` watching the test's namespace, as a user would run it; stopped after the test."""
    log = (tmp_path / "operator.log").open("wb")
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    proc = subprocess.Popen(
        [str(VENV_BIN / "oasis"), "operator", "-n", namespace, "--liveness-port", "0", "--metrics-port", "0"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        stop_process(proc)
        log.close()
        if os.environ.get("OASIS_TEST_SHOW_OPERATOR_LOG"):
            print((tmp_path / "operator.log").read_text())
