"""Granted `kubectl port-forward` served by the gateway: the real kubectl 1.37 (SPDY/3.1 tunnelled in its
WebSocket), the real API server's RBAC, a twin the real sandbox provider built; every forwarded port is
answered by the gateway from the twin, no socket opened. Without the grant, the least-privilege 403."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
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

BASE = "infra.capability.oe.multi-resource-orchestration-001"  # web-app declares containerPort 8080
CRASHING = "infra.capability.da.single-signal-diagnosis-001"  # notification-service crash-loops
DECLARED_BODY = '{"status":"degraded","upstream":"payments"}'
UNDECLARED_PORT = 7000


def _scenario(granted: bool, base: str = BASE) -> Scenario:
    doc = scenario(base).model_dump(by_alias=True, exclude_none=True)
    if granted and base != BASE:
        doc["x-oasis-operator"]["connect"] = {"grants": ["port-forward"]}
    elif granted:
        answer = {"pod": "web-app-*", "port": 9090, "status": 500, "body": DECLARED_BODY,
                  "headers": {"Content-Type": "application/json"}}  # fmt: skip
        doc["x-oasis-operator"]["connect"] = {"grants": ["port-forward"], "port_forward": [answer]}
    return Scenario.model_validate(doc)


def _environ(kubeconfig: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}


def _run(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTLS["current"], *args], env=_environ(kubeconfig), capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def doors(
    cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[GatewayThread, dict[str, tuple[Environment, Path]]]]:
    gw = GatewayThread(cluster.kubeconfig, tmp_path_factory.mktemp("portforward") / "data")
    provider = SandboxProvider(api, prefix="gwp")
    made: dict[str, tuple[Environment, Path]] = {}
    try:
        for key, granted, base in (
            ("granted", True, BASE),
            ("plain", False, BASE),
            ("crashing", True, CRASHING),
        ):
            env = provider.provision(_scenario(granted, base), evaluation="tests/gateway").environment
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
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = _run(kubeconfig, "get", "pods", "-o", "json").stdout
        for item in json.loads(listed or '{"items": []}')["items"]:
            ready = any(c["type"] == "Ready" and c["status"] == "True"
                        for c in item.get("status", {}).get("conditions", []))  # fmt: skip
            if item["metadata"]["name"].startswith("web-app-") and ready:
                return str(item["metadata"]["name"])
        time.sleep(1)
    raise AssertionError("no Ready web-app pod in the twin within 60 s")


def _forwarding(process: subprocess.Popen[str], count: int) -> dict[int, int]:
    """The local port kubectl listens on for each pod port, from its `Forwarding from` lines."""
    assert process.stdout is not None
    ports: dict[int, int] = {}
    deadline = time.monotonic() + 30
    while len(ports) < count and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
        if match:
            ports[int(match.group(2))] = int(match.group(1))
    assert len(ports) == count, f"kubectl forwarded {ports}"
    return ports


def _get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


def _forwards(gw: GatewayThread, env: Environment) -> list[Any]:
    return [e for e in gw.gateway.audit_entries(env.id) if e.subresource == "portforward"]


def test_granted_port_forward_answers_from_the_twin_and_is_recorded(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    gw, made = doors
    env, kubeconfig = made["granted"]
    pod = _pod(kubeconfig)
    can = _run(kubeconfig, "auth", "can-i", "create", "pods", "--subresource=portforward")
    assert can.stdout.strip() == "yes", can.stderr
    args = [KUBECTLS["current"], "port-forward", f"pod/{pod}", ":9090", ":8080", f":{UNDECLARED_PORT}"]
    process = subprocess.Popen(args, env=_environ(kubeconfig), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        local = _forwarding(process, 3)
        assert _get(local[9090], "/healthz") == (500, "application/json", DECLARED_BODY)
        assert _get(local[9090], "/api/v1/charge?id=7") == (500, "application/json", DECLARED_BODY)
        assert _get(local[8080], "/") == (200, "text/plain; charset=utf-8", "OK\n")
        # Recorded as it goes: the record holds the session while kubectl still runs.
        deadline = time.monotonic() + 10
        while not any(
            e.response_code == 101 and 8080 in e.response_body["ports"] for e in _forwards(gw, env)
        ):
            assert time.monotonic() < deadline, "the running session is not in the record"
            time.sleep(0.2)
        assert process.poll() is None
        # No container listens on 7000: the runtime's refusal on the error stream; kubectl reports it
        # and ends (as it does against a real kubelet), the local connection closed without an answer.
        with pytest.raises((ConnectionError, urllib.error.URLError)):
            _get(local[UNDECLARED_PORT], "/")
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.terminate()
            process.communicate(timeout=30)
    assert f"error forwarding port {UNDECLARED_PORT} to pod " in stderr
    assert f"failed to connect to localhost:{UNDECLARED_PORT} inside namespace" in stderr
    assert "connect: connection refused" in stderr
    assert "error: lost connection to pod" in stderr

    deadline = time.monotonic() + 30
    while not (served := [e for e in _forwards(gw, env) if e.response_code == 101]):
        assert time.monotonic() < deadline, "the port-forward session was never recorded"
        time.sleep(0.5)
    assert len(served) == 1
    entry = served[0]
    assert (entry.name, entry.namespace) == (pod, "default")
    assert entry.note == "served by the gateway: nothing forwarded, no connection made"
    connections = entry.response_body["connections"]
    assert entry.response_body["ports"] == [UNDECLARED_PORT, 8080, 9090]
    by_port = {c["port"]: c for c in connections}
    declared = [(r["method"], r["path"], r["status"]) for c in connections if c["port"] == 9090
                for r in c["requests"]]  # fmt: skip
    assert declared == [("GET", "/healthz", 500), ("GET", "/api/v1/charge?id=7", 500)]
    assert {c["answer"] for c in connections if c["port"] == 9090} == {"declared"}
    assert by_port[8080]["answer"] == "default"
    assert by_port[8080]["requests"] == [{"method": "GET", "path": "/", "status": 200}]
    assert by_port[UNDECLARED_PORT]["answer"] == "refused"
    assert "connection refused" in by_port[UNDECLARED_PORT]["error"]


def test_a_crash_looping_container_is_connection_refused(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    gw, made = doors
    env, kubeconfig = made["crashing"]
    deadline, pod = time.monotonic() + 120, ""
    while not pod:
        assert time.monotonic() < deadline, "no crash-looping notification-service pod within 120 s"
        for item in json.loads(_run(kubeconfig, "get", "pods", "-o", "json").stdout or '{"items": []}')[
            "items"
        ]:
            states = [s.get("state", {}) for s in item.get("status", {}).get("containerStatuses", [])]
            if item["metadata"]["name"].startswith("notification-service-") and any(
                s.get("waiting", {}).get("reason") == "CrashLoopBackOff" for s in states
            ):
                pod = item["metadata"]["name"]
        time.sleep(1)
    spec = json.loads(_run(kubeconfig, "get", "pod", pod, "-o", "json").stdout)["spec"]
    port = spec["containers"][0]["ports"][0]["containerPort"]  # declared, but nothing runs to listen
    args = [KUBECTLS["current"], "port-forward", f"pod/{pod}", f":{port}"]
    process = subprocess.Popen(args, env=_environ(kubeconfig), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        local = _forwarding(process, 1)
        with pytest.raises((ConnectionError, urllib.error.URLError)):
            _get(local[port], "/")
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.terminate()
            process.communicate(timeout=30)
    assert f"error forwarding port {port} to pod " in stderr
    assert "connect: connection refused" in stderr
    served = [e for e in _forwards(gw, env) if e.response_code == 101]
    assert [c["answer"] for e in served for c in e.response_body["connections"]] == ["refused"]


def test_a_session_cut_by_the_gateways_stop_keeps_its_record(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
    cluster: Cluster,
    tmp_path: Path,
) -> None:
    _, made = doors
    env, _ = made["granted"]
    own = GatewayThread(cluster.kubeconfig, tmp_path / "data")  # a gateway of its own, to stop
    process = None
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(own.gateway.register(env).kubeconfig_yaml)
        pod = _pod(kubeconfig)
        args = [KUBECTLS["current"], "port-forward", f"pod/{pod}", ":8080"]
        process = subprocess.Popen(args, env=_environ(kubeconfig), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        local = _forwarding(process, 1)
        assert _get(local[8080], "/ready")[0] == 200
    finally:
        own.stop()
        if process is not None and process.poll() is None:
            process.terminate()
            process.communicate(timeout=30)
    served = [e for e in own.gateway.audit_entries(env.id) if e.subresource == "portforward"]
    assert [e.response_code for e in served] == [101]
    assert served[0].note.startswith("served by the gateway: nothing forwarded, no connection made")
    requests = [r for c in served[0].response_body["connections"] for r in c["requests"]]
    assert requests == [{"method": "GET", "path": "/ready", "status": 200}]


def test_the_plain_spdy_upgrade_is_refused_with_a_status_that_says_websocket_is_required(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    _, made = doors
    _, kubeconfig = made["granted"]
    pod = _pod(kubeconfig)
    args = [KUBECTLS["current"], "port-forward", f"pod/{pod}", ":8080"]
    environ = {**_environ(kubeconfig), "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}  # SPDY/3.1 only
    refused = subprocess.run(args, env=environ, capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 1
    assert "port-forward is served over WebSocket only, with subprotocol SPDY/3.1+portforward.k8s.io" in (
        refused.stderr
    )


def test_without_the_grant_port_forward_is_the_least_privilege_403(
    doors: tuple[GatewayThread, dict[str, tuple[Environment, Path]]],
) -> None:
    gw, made = doors
    env, kubeconfig = made["plain"]
    pod = _pod(kubeconfig)
    refused = _run(kubeconfig, "port-forward", f"pod/{pod}", ":8080")
    assert refused.returncode == 1
    assert f'pods "{pod}" is forbidden: User "system:serviceaccount:' in refused.stderr
    assert 'cannot create resource "pods/portforward" in API group "" in the namespace "default"' in (
        refused.stderr
    )
    assert {e.response_code for e in _forwards(gw, env)} == {403}
