"""The Python kubernetes client through the gateway, a leak check over a whole kubectl session, and the
door itself: tokens, revocation, the record as evidence."""

from __future__ import annotations

import gc
import hashlib
import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import watch
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api
from kubernetes.client.exceptions import ApiException

from oasis_operator.gateway.state import EnvState
from oasis_operator.kube import api_client
from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for
from tests.integration.gateway.conftest import Door, find
from tests.integration.gateway.twin import GatewayThread, built_environment

SESSION = [
    ["get", "pods"],
    ["get", "pods", "-A", "-o", "wide"],
    ["get", "all"],
    ["get", "deployments", "-o", "yaml"],
    ["get", "namespaces", "-o", "yaml"],
    ["get", "nodes", "-o", "json"],
    ["describe", "nodes"],
    ["describe", "deployment", "api-service"],
    ["get", "events", "-A"],
    ["get", "rolebindings", "-o", "yaml"],
    ["get", "serviceaccounts", "-o", "yaml"],
    ["get", "secrets", "-o", "yaml"],
    ["get", "configmaps", "-o", "json"],
    ["get", "pods", "-n", "kube-system"],
    ["get", "pods", "-n", "monitoring"],
    ["get", "namespace", "kube-system"],
    ["delete", "deployment", "payments", "-n", "prod"],
    ["auth", "can-i", "--list"],
    ["auth", "can-i", "create", "pods", "-n", "kube-system"],
    ["logs", "deployment/api-service"],
    ["api-resources"],
]


def _leaks(text: str, door: Door) -> list[str]:
    env = door.env
    marks = [f"{env.prefix}-{env.id}", env.control_namespace, "127.0.0.1:" + _server_port(door)]
    marks += [b.sandbox for b in env.namespaces] + [o.sandbox for o in env.cluster_objects]
    return sorted({m for m in marks if m in text})


def _server_port(door: Door) -> str:
    server = api_client_server(door)
    return server.rsplit(":", 1)[1]


def api_client_server(door: Door) -> str:
    return door.gw.gateway.upstream.config.server


@pytest.mark.parametrize("kubectl", list(KUBECTLS.values()), ids=list(KUBECTLS))
def test_no_sandbox_name_in_any_response_of_a_kubectl_session(door: Door, kubectl: str) -> None:
    seen = []
    for args in SESSION:
        result = door.kubectl(kubectl, *args, "-v=10", timeout=60)
        leaks = _leaks(result.stdout + result.stderr, door)
        assert not leaks, f"kubectl {' '.join(args)} showed {leaks}"
        assert "kubernetes.io/service-account-token" not in result.stdout, args
        seen.append(result.stdout)
    everything = "\n".join(seen)
    assert "api-service" in everything
    assert "worker-1" in everything
    assert "db-credentials" in everything
    assert "oasis" not in everything


def test_python_client_session(door: Door, tmp_path: Path, api: ApiClient) -> None:
    agent = api_client(door.kubeconfig)
    core: Any = CoreV1Api(agent)
    apps: Any = AppsV1Api(agent)
    mark = door.mark()
    pods = core.list_namespaced_pod("default")
    assert {p.metadata.namespace for p in pods.items} == {"default"}
    assert {p.spec.node_name for p in pods.items} == {"worker-1"}
    dep = apps.read_namespaced_deployment("api-service", "default")
    assert dep.metadata.namespace == "default"
    apps.patch_namespaced_deployment("api-service", "default", {"metadata": {"labels": {"owner": "py"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "py-a", "labels": {"batch": "py"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "py-b", "labels": {"batch": "py"}}})
    core.delete_collection_namespaced_config_map("default", label_selector="batch=py")
    with pytest.raises(ApiException) as refused:
        core.delete_collection_namespaced_pod("prod")
    assert refused.value.status == 403
    stream = watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=2)
    events = list(stream)
    assert events
    assert {e["object"].metadata.namespace for e in events} == {"default"}
    nss = [n.metadata.name for n in core.list_namespace().items]
    assert sorted(nss) == ["default", "monitoring", "prod"]
    agent.close()
    entries = door.since(mark)
    assert find(entries, verb="patch", resource="deployments", name="api-service").response_code == 200
    collection = find(entries, verb="deletecollection", resource="configmaps", namespace="default")
    assert collection.label_selector == "batch=py"
    assert collection.response_code == 200
    assert find(entries, verb="deletecollection", resource="pods", namespace="prod").response_code == 403
    assert find(entries, verb="watch", resource="pods", namespace="default").response_code == 200
    admin: Any = CoreV1Api(api)
    assert not admin.list_namespaced_config_map(door.sandbox("default"), label_selector="batch=py").items


def _get(url: str, token: str | None, cafile: Path) -> tuple[int, bytes]:
    ctx = ssl.create_default_context(cafile=str(cafile))
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_tokens_are_checked_and_die_at_revocation(cluster: Cluster, api: ApiClient, tmp_path: Path) -> None:
    gw = GatewayThread(cluster.kubeconfig, tmp_path / "data")
    try:
        with built_environment(api) as env:
            creds = gw.gateway.register(env)
            ca = gw.gateway.ca_cert
            url = f"{creds.server}/api/v1/namespaces/default/pods"
            assert _get(url, creds.token, ca)[0] == 200
            assert _get(url, "not-the-token", ca)[0] == 401
            assert _get(url, None, ca)[0] == 401
            other = gw.gateway.url + "/env/zzzzzz99/api/v1/pods"
            assert _get(other, creds.token, ca)[0] == 401
            gw.gateway.revoke(env.id)
            code, body = _get(url, creds.token, ca)
            assert code == 401
            assert b'"reason": "Unauthorized"' in body
            entries = gw.gateway.audit_entries(env.id)
            # Attributed by credential: a stranger's token and no token at this door are this door's
            # (foreign, anonymous); its own token at another door is still its own, refused.
            assert [(e.actor, e.response_code, e.note) for e in entries] == [
                ("agent", 200, ""),
                ("foreign", 401, "refused: a bearer credential that is not the environment's own"),
                ("anonymous", 401, "refused: no credential"),
                ("agent", 401, "refused: its token at the door of 'zzzzzz99'"),
                ("agent", 401, "refused: the token was revoked"),
            ]
            assert entries[1].credential == "sha256:" + hashlib.sha256(b"not-the-token").hexdigest()[:16]
            assert [e.credential for e in entries if e.seq != 2] == [None] * 4
            assert [e.path for e in entries[2:4]] == [
                "/api/v1/namespaces/default/pods",
                "/env/zzzzzz99/api/v1/pods",
            ]
            assert all(e.resource == "pods" for e in entries)
            kubeconfig = creds.kubeconfig_yaml
            assert gw.gateway.upstream.config.server not in kubeconfig
            assert "namespace: default" in kubeconfig
            assert creds.endpoints["observability-metrics"] == f"{creds.server}/prometheus"
    finally:
        gw.stop()


def test_a_released_environment_leaves_no_state_and_its_token_is_still_refused_and_recorded(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    """Issue 21: the gateway kept every finished environment's state (names, fixtures, stimuli,
    recorder) for the operator's life. Released, only its id and token are left."""
    gw = GatewayThread(cluster.kubeconfig, tmp_path / "data")
    try:
        with built_environment(api) as env:
            creds = gw.gateway.register(env)
            ca = gw.gateway.ca_cert
            url = f"{creds.server}/api/v1/namespaces/default/pods"
            assert _get(url, creds.token, ca)[0] == 200
            gw.gateway.release(env.id)
            with pytest.raises(KeyError):
                gw.gateway.state(env.id)
            gc.collect()
            # This environment's state only: other tests' gateways (module fixtures) hold theirs.
            assert [o for o in gc.get_objects() if isinstance(o, EnvState) and o.env.id == env.id] == []
            assert gw.gateway.has_environment(env.id)
            assert _get(url, creds.token, ca)[0] == 401
            assert _get(url, None, ca)[0] == 401
            # Recorded in the environment's own record, which reads whole (its hash chain continued).
            entries = gw.gateway.audit_entries(env.id)
            assert [(e.actor, e.response_code, e.note) for e in entries] == [
                ("agent", 200, ""),
                ("agent", 401, "refused: the token was revoked"),
                ("anonymous", 401, "refused: no credential"),
            ]
            assert [e.seq for e in entries] == [1, 2, 3]
            assert gw.gateway.unmatched_entries() == []
    finally:
        gw.stop()


def test_storage_fault_makes_the_record_unreachable(cluster: Cluster, api: ApiClient, tmp_path: Path) -> None:
    gw = GatewayThread(cluster.kubeconfig, tmp_path / "data")
    try:
        with built_environment(api) as env:
            creds = gw.gateway.register(env)
            ca = gw.gateway.ca_cert
            url = f"{creds.server}/api/v1/namespaces/default/configmaps"
            assert _get(url, creds.token, ca)[0] == 200
            assert gw.gateway.evidence(env.id).available
            record = tmp_path / "data" / env.id / "gateway-audit.jsonl"
            record.unlink()
            record.mkdir()  # appending to a directory fails like a broken disk would
            code, _ = _get(url, creds.token, ca)
            assert code == 503  # refused: it could not be recorded
            evidence = gw.gateway.evidence(env.id)
            assert not evidence.available
            assert evidence.entries == []
            assert evidence.reason
    finally:
        gw.stop()


def test_all_namespaces_watch_merges_the_environment_namespaces(door: Door, api: ApiClient) -> None:
    agent = api_client(door.kubeconfig)
    core: Any = CoreV1Api(agent)
    mark = door.mark()
    listed = core.list_pod_for_all_namespaces()
    assert {p.metadata.namespace for p in listed.items} == {"default", "prod"}
    events = list(watch.Watch().stream(core.list_pod_for_all_namespaces, timeout_seconds=2))
    assert {e["object"].metadata.namespace for e in events} == {"default", "prod"}
    # Every pod of both namespaces first, then what changes (a crash-looping pod's restarts).
    added = {
        (e["object"].metadata.namespace, e["object"].metadata.name) for e in events if e["type"] == "ADDED"
    }
    assert added == {(p.metadata.namespace, p.metadata.name) for p in listed.items}
    assert {e["type"] for e in events} <= {"ADDED", "MODIFIED"}
    agent.close()

    # A watch is recorded twice: "stream open" (code 200, no bytes yet) when it starts, then its closing
    # line just after the last byte is sent, which may come after the client has read the end.
    # Wait for the closing line, not the opening one.
    def closed() -> Any:
        entry = find(door.since(mark), verb="watch", resource="pods", namespace=None)
        return entry if entry.response_code and entry.note != "stream open" else None

    entry = wait_for(closed, timeout=10, what="the watch's closing line in the record")
    assert entry.response_code == 200
    assert entry.response_bytes


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/api/v1/nodes/worker-1/../../namespaces/kube-system/secrets", 400),
        ("/api/v1/nodes/worker-1/%2e%2e/%2e%2e/namespaces/kube-system/secrets", 400),
        ("/api/v1/namespaces/default/pods/x%2F..%2F..%2Fkube-system", 400),
        ("/api/v1/namespaces/default/pods/x%3Fwatch=1", 400),
        ("/api/v1/nodes/worker-1/proxy/metrics", 403),  # not a gateway read: the real RBAC refuses it
    ],
)
def test_paths_that_would_leave_the_environment_are_refused_and_recorded(
    door: Door, path: str, code: int
) -> None:
    mark = door.mark()
    host, port = door.gw.gateway.host, door.gw.gateway.port
    ctx = ssl.create_default_context(cafile=str(door.gw.gateway.ca_cert))
    connection = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
    # http.client sends the path exactly as given (no dot-segment normalisation), like a hostile client.
    headers = {"Authorization": f"Bearer {door.creds.token}"}
    connection.request("GET", f"/env/{door.env.id}{path}", headers=headers)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    assert response.status == code
    assert b"kube-system" not in body or code == 400
    (entry,) = door.since(mark)
    assert entry.path == path
    assert entry.response_code == code


def test_two_environments_on_one_gateway_cannot_see_each_other(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    gw = GatewayThread(cluster.kubeconfig, tmp_path / "data")
    try:
        with built_environment(api) as first, built_environment(api) as second:
            a, b = gw.gateway.register(first), gw.gateway.register(second)
            ca = gw.gateway.ca_cert
            assert _get(f"{b.server}/api/v1/namespaces/default/pods", a.token, ca)[0] == 401
            other_ns = second.sandbox_namespace("default")
            code, body = _get(f"{a.server}/api/v1/namespaces/{other_ns}/pods", a.token, ca)
            assert code == 403
            assert other_ns.encode() in body  # the name the agent typed, refused like any namespace
            assert _get(f"{a.server}/api/v1/namespaces/{other_ns}", a.token, ca)[0] == 404
            code, body = _get(f"{a.server}/api/v1/namespaces", a.token, ca)
            names = sorted(item["metadata"]["name"] for item in json.loads(body)["items"])
            assert names == ["default", "monitoring", "prod"]
            code, body = _get(f"{a.server}/api/v1/pods", a.token, ca)
            pods = json.loads(body)["items"]
            assert pods
            assert {p["metadata"]["namespace"] for p in pods} == {"default", "prod"}
            assert second.id not in body.decode()
    finally:
        gw.stop()


def test_cluster_scoped_watches_show_only_this_environment(door: Door) -> None:
    agent = api_client(door.kubeconfig)
    core: Any = CoreV1Api(agent)
    mark = door.mark()
    namespaces = {
        e["object"].metadata.name for e in watch.Watch().stream(core.list_namespace, timeout_seconds=2)
    }
    nodes = {e["object"].metadata.name for e in watch.Watch().stream(core.list_node, timeout_seconds=2)}
    agent.close()
    assert namespaces == {"default", "monitoring", "prod"}
    assert nodes == {"worker-1", "worker-2"}
    watched = [e for e in door.since(mark) if e.verb == "watch"]
    assert {(e.resource, e.response_code) for e in watched} == {("namespaces", 200), ("nodes", 200)}


def test_an_unreachable_api_server_is_answered_and_recorded(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{dead_port}"
    dead = tmp_path / "dead-kubeconfig"
    dead.write_text(yaml.safe_dump(config))
    gw = GatewayThread(dead, tmp_path / "data")
    try:
        with built_environment(api) as env:
            creds = gw.gateway.register(env)
            code, body = _get(
                f"{creds.server}/api/v1/namespaces/default/pods", creds.token, gw.gateway.ca_cert
            )
            assert code == 502
            assert b"could not be reached" in body
            (entry,) = gw.gateway.audit_entries(env.id)
            assert (entry.verb, entry.response_code) == ("list", 502)
            assert "ClientConnectorError" in entry.note
    finally:
        gw.stop()
