"""Container logs through the gateway: init containers and sidecars by `-c`, as the API server and the
kubelet answer them, on a twin the real sandbox provider built from a shipped scenario."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.models.environment import Environment
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import KUBECTLS, Cluster
from tests.integration.gateway.twin import GatewayThread
from tests.unit.sandbox.test_twin import scenario

CASCADE = "infra.capability.da.cascading-diagnosis-001"
MIGRATION = "ERROR: migration 042_add_index failed: relation already exists"
SIDECAR = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"


def _run(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}
    return subprocess.run([KUBECTLS["current"], *args], env=environ, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def twin(
    cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[GatewayThread, Environment, Path]]:
    gw = GatewayThread(cluster.kubeconfig, tmp_path_factory.mktemp("logs") / "data")
    provider = SandboxProvider(api, prefix="gwl")
    env = provider.provision(scenario(CASCADE), evaluation="tests/gateway").environment
    try:
        creds = gw.gateway.register(env)
        kubeconfig = tmp_path_factory.mktemp("agent") / "kubeconfig"
        kubeconfig.write_text(creds.kubeconfig_yaml)
        yield gw, env, kubeconfig
    finally:
        gw.gateway.revoke(env.id)
        provider.teardown(env.id, wait=False)
        gw.stop()


def _pod(kubeconfig: Path) -> str:
    names = _run(kubeconfig, "get", "pods", "-o", "name").stdout.split()
    return next(n.split("/", 1)[1] for n in names if n.startswith("pod/api-backend-"))


def test_init_container_and_sidecar_logs_are_read_with_c(
    twin: tuple[GatewayThread, Environment, Path],
) -> None:
    gw, env, kubeconfig = twin
    pod = _pod(kubeconfig)
    migrate = _run(kubeconfig, "logs", pod, "-c", "db-migrate")
    assert (migrate.returncode, migrate.stdout) == (0, MIGRATION + "\n"), migrate.stderr
    sidecar = _run(kubeconfig, "logs", pod, "-c", "service-mesh-sidecar", "--tail=1")
    assert (sidecar.returncode, sidecar.stdout) == (0, SIDECAR + "\n"), sidecar.stderr
    # The application container never started (its init container fails): the kubelet has no log.
    app = _run(kubeconfig, "logs", pod, "-c", "api-backend")
    assert app.returncode == 1
    assert f'container "api-backend" in pod "{pod}" is waiting to start: PodInitializing' in app.stderr
    logs = [e for e in gw.gateway.audit_entries(env.id) if e.subresource == "log" and e.name == pod]
    assert {(e.query.get("container"), e.response_code) for e in logs} >= {
        ("db-migrate", 200),
        ("service-mesh-sidecar", 200),
        ("api-backend", 400),
    }


def test_a_container_the_pod_lacks_is_refused_as_the_api_server_refuses_it(
    twin: tuple[GatewayThread, Environment, Path], cluster: Cluster
) -> None:
    _, env, kubeconfig = twin
    pod = _pod(kubeconfig)
    sandbox_ns = next(b.sandbox for b in env.namespaces if b.declared == "default")
    path = f"pods/{pod}/log?container=nope"
    ours = _run(kubeconfig, "get", "--raw", f"/api/v1/namespaces/default/{path}")
    real = _run(cluster.kubeconfig, "get", "--raw", f"/api/v1/namespaces/{sandbox_ns}/{path}")
    assert ours.returncode == real.returncode == 1
    assert f"container nope is not valid for pod {pod}" in real.stderr
    assert ours.stderr == real.stderr
