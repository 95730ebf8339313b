"""Granted `kubectl exec` served by the gateway: the real kubectl, the real API server's RBAC, a twin the
real sandbox provider built; nothing forwarded, nothing run. Without the grant, the existing 403."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.models.environment import Environment
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import KUBECTLS, Cluster
from tests.integration.gateway.twin import GatewayThread
from tests.unit.sandbox.test_twin import scenario

BASE = "infra.capability.oe.multi-resource-orchestration-001"  # web-app mounts configmap/feature-flags
DECLARED = "PAYMENTS_URL=http://payments.default.svc:8080 reachable\n"


def _granted(grants: list[str] | None) -> Scenario:
    doc = scenario(BASE).model_dump(by_alias=True, exclude_none=True)
    for entry in doc["preconditions"]["environment"]["state"]:
        if entry["resource"] == "deployment/web-app":
            flag = {"configMapKeyRef": {"name": "feature-flags", "key": "DARK_LAUNCH"}}
            entry["env"] = {"LOG_LEVEL": "info", "DARK": flag}
    if grants is not None:
        answers = [{"pod": "web-app-*", "command": "curl -s payments:8080/health", "stdout": DECLARED}]
        doc["x-oasis-operator"]["connect"] = {"grants": grants, "exec": answers}
    return Scenario.model_validate(doc)


def _run(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}
    return subprocess.run([KUBECTLS["current"], *args], env=environ, capture_output=True, text=True,
                          input=stdin, timeout=60, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def doors(
    cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[GatewayThread, dict[str, tuple[Environment, Path]]]]:
    gw = GatewayThread(cluster.kubeconfig, tmp_path_factory.mktemp("exec") / "data")
    provider = SandboxProvider(api, prefix="gwx")
    made: dict[str, tuple[Environment, Path]] = {}
    try:
        for key, grants in (("granted", ["exec", "attach"]), ("plain", None)):
            env = provider.provision(_granted(grants), evaluation="tests/gateway").environment
            kubeconfig = tmp_path_factory.mktemp(key) / "kubeconfig"
            kubeconfig.write_text(gw.gateway.register(env).kubeconfig_yaml)
            made[key] = (env, kubeconfig)
        yield gw, made
    finally:
        for env, _ in made.values():
            gw.gateway.revoke(env.id)
            provider.teardown(env.id, wait=False)
        gw.stop()


def _pod(kubeconfig: Path) -> str:
    names = _run(kubeconfig, "get", "pods", "-o", "name").stdout.split()
    return next(n.split("/", 1)[1] for n in names if n.startswith("pod/web-app-"))


def _execs(gw: GatewayThread, env: Environment) -> list[Any]:
    return [e for e in gw.gateway.audit_entries(env.id) if e.subresource == "exec"]


def test_granted_exec_is_served_from_the_twin_and_recorded(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    gw, made = doors
    env, kubeconfig = made["granted"]
    pod = _pod(kubeconfig)
    # `can-i create pods/exec` would ask about a pod named "exec": the subresource is a flag.
    can = _run(kubeconfig, "auth", "can-i", "create", "pods", "--subresource=exec")
    assert can.stdout.strip() == "yes", can.stderr
    assert (
        _run(kubeconfig, "auth", "can-i", "create", "pods", "--subresource=portforward").stdout.strip()
        == "no"
    )

    listed = _run(kubeconfig, "exec", pod, "--", "env")
    assert listed.returncode == 0, listed.stderr
    assert {"LOG_LEVEL=info", "DARK=false", f"HOSTNAME={pod}"} <= set(listed.stdout.splitlines())

    flag = _run(kubeconfig, "exec", pod, "--", "cat", "/etc/feature-flags/DARK_LAUNCH")
    assert (flag.returncode, flag.stdout) == (0, "false"), flag.stderr

    declared = _run(kubeconfig, "exec", pod, "--", "sh", "-c", "curl -s payments:8080/health")
    assert declared.returncode == 127  # not the declared command line: sh has no curl here
    declared = _run(kubeconfig, "exec", pod, "--", "curl", "-s", "payments:8080/health")
    assert (declared.returncode, declared.stdout) == (0, DECLARED), declared.stderr

    # With stdin sent (`-i`): nothing reads it, the command ends and kubectl with it.
    piped = _run(kubeconfig, "exec", "-i", pod, "--", "hostname", stdin="ignored\n")
    assert (piped.returncode, piped.stdout) == (0, pod + "\n"), piped.stderr

    missing = _run(kubeconfig, "exec", pod, "--", "nosuchcmd")
    assert missing.returncode == 127
    assert 'exec: "nosuchcmd": executable file not found in $PATH' in missing.stdout + missing.stderr
    assert "command terminated with exit code 127" in missing.stderr

    wrong = _run(kubeconfig, "exec", pod, "-c", "nope", "--", "env")
    assert wrong.returncode == 1
    assert f"container nope is not valid for pod {pod}" in wrong.stderr
    absent = _run(kubeconfig, "exec", "web-app-nope", "--", "env")
    assert absent.returncode == 1
    assert 'pods "web-app-nope" not found' in absent.stderr

    served = [e for e in _execs(gw, env) if e.response_code == 101]
    assert [e.response_body["command"] for e in served] == [
        ["env"],
        ["cat", "/etc/feature-flags/DARK_LAUNCH"],
        ["sh", "-c", "curl -s payments:8080/health"],
        ["curl", "-s", "payments:8080/health"],
        ["hostname"],
        ["nosuchcmd"],
    ]
    assert served[1].response_body["stdout"] == "false"
    assert served[3].response_body["answer"] == "declared"
    assert {(e.name, e.namespace, e.note) for e in served} == {
        (pod, "default", "served by the gateway: nothing forwarded, no command run")
    }


def test_granted_attach_reads_the_log(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    _, made = doors
    _, kubeconfig = made["granted"]
    pod = _pod(kubeconfig)
    attached = _run(kubeconfig, "attach", pod)
    log = _run(kubeconfig, "logs", pod)
    assert attached.returncode == 0, attached.stderr
    assert log.stdout
    assert log.stdout in attached.stdout


def test_without_the_grant_exec_is_the_least_privilege_403(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    gw, made = doors
    env, kubeconfig = made["plain"]
    pod = _pod(kubeconfig)
    assert _run(kubeconfig, "auth", "can-i", "create", "pods", "--subresource=exec").stdout.strip() == "no"
    refused = _run(kubeconfig, "exec", pod, "--", "env")
    assert refused.returncode == 1
    assert f'pods "{pod}" is forbidden: User "system:serviceaccount:' in refused.stderr
    assert 'cannot create resource "pods/exec" in API group "" in the namespace "default"' in refused.stderr
    assert {e.response_code for e in _execs(gw, env)} == {403}
