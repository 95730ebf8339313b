"""The local control plane behaves as the sandbox needs: a real API server, the standard controllers, the
scheduler and kwok."""

from __future__ import annotations

import json
import socket
import ssl
import uuid

import pytest
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api
from kubernetes.client.exceptions import ApiException

from oasis_operator.gateway.upstream import gateway_kubeconfig
from oasis_operator.kube import api_client, request
from oasis_operator.pki import GATEWAY_USER
from oasis_operator.sandbox.kwok import ensure_lifecycle
from oasis_operator.sandbox.snapshot import field_managers, normalise
from tests.cluster_fixtures import Cluster, wait_for


def _deployment(name: str) -> dict[str, object]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.4.2"}]},
            },
        },
    }


def test_api_server_is_ready_and_rbac_is_on(cluster: Cluster) -> None:
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    out = cluster.kubectl("api-versions").stdout.split()
    assert "rbac.authorization.k8s.io/v1" in out
    # An identity with no bindings is refused by RBAC.
    denied = cluster.kubectl("auth", "can-i", "list", "pods", "--as", "nobody", check=False)
    assert denied.stdout.strip() == "no"


def test_new_namespace_gets_default_service_account(api: ApiClient, namespace: str) -> None:
    core = CoreV1Api(api)
    names = wait_for(
        lambda: [sa.metadata.name for sa in core.list_namespaced_service_account(namespace).items],
        timeout=30,
        what="the default ServiceAccount",
    )
    assert "default" in names


def test_the_controllers_scheduler_and_kwok_run_a_deployment_on_a_node(
    api: ApiClient, namespace: str
) -> None:
    """A Deployment gets its ReplicaSet and pods from the controllers, the scheduler binds them to the
    one node they tolerate, and kwok (the node's kubelet) reports them Running and Ready by the lifecycle
    Stages the sandbox installs."""
    ensure_lifecycle(api)
    apps, core = AppsV1Api(api), CoreV1Api(api)
    node = f"plane-{uuid.uuid4().hex[:6]}"
    core.create_node(
        {
            "metadata": {"name": node, "labels": {"plane-test": node}},
            # Only this test's pods tolerate it: nothing else on the shared plane lands here.
            "spec": {"taints": [{"key": "plane-test", "value": node, "effect": "NoSchedule"}]},
        }
    )
    room = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    core.patch_node_status(node, {"status": {"capacity": room, "allocatable": room}})
    try:
        body = _deployment("checkout")
        body["spec"]["template"]["spec"].update(  # type: ignore[index]
            nodeSelector={"plane-test": node},
            tolerations=[{"key": "plane-test", "operator": "Equal", "value": node, "effect": "NoSchedule"}],
        )
        apps.create_namespaced_deployment(namespace, body)

        def ready() -> int:
            status = apps.read_namespaced_deployment_status("checkout", namespace).status
            return int(status.ready_replicas or 0) == 2

        wait_for(ready, timeout=60, what="two ready replicas of checkout")
        assert len(_replicasets(apps, namespace)) == 1
        pods = core.list_namespaced_pod(namespace, label_selector="app=checkout").items
        assert {p.spec.node_name for p in pods} == {node}
        assert {p.status.phase for p in pods} == {"Running"}
        reasons = {e.reason for e in core.list_namespaced_event(namespace).items}
        assert {"ScalingReplicaSet", "SuccessfulCreate", "Scheduled"} <= reasons
    finally:
        apps.delete_collection_namespaced_deployment(namespace)
        core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        core.delete_node(node)


def _replicasets(apps: AppsV1Api, namespace: str) -> list[str]:
    return [rs.metadata.name for rs in apps.list_namespaced_replica_set(namespace).items]


def test_namespace_deletion_finishes(api: ApiClient) -> None:
    core = CoreV1Api(api)
    name = f"t-del-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(name, {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    core.delete_namespace(name)

    def gone() -> bool:
        try:
            core.read_namespace(name)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout=60, interval=1, what=f"namespace {name} to finish terminating")


def test_writes_are_audited_with_bodies(cluster: Cluster, api: ApiClient, namespace: str) -> None:
    if cluster.audit_log is None:
        pytest.skip("reused cluster without OASIS_TEST_AUDIT_LOG")
    core = CoreV1Api(api)
    marker = uuid.uuid4().hex
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "audited"}, "data": {"marker": marker}}
    )
    core.read_namespaced_config_map("audited", namespace)  # the operator's own read: not recorded
    # Reads by any other identity are recorded at Metadata: here the gateway's own.
    gateway = api_client(gateway_kubeconfig(cluster.kubeconfig))
    try:
        CoreV1Api(gateway).read_namespaced_config_map("audited", namespace)
    finally:
        gateway.close()  # type: ignore[no-untyped-call]

    def entries() -> list[dict[str, object]]:
        found = []
        for line in cluster.audit_log.read_text().splitlines():  # type: ignore[union-attr]
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if ref.get("namespace") == namespace and ref.get("name") == "audited":
                found.append(event)
        return found

    events = wait_for(
        lambda: [e for e in entries() if e["verb"] == "get"] and entries(), what="audit entries"
    )
    create = next(e for e in events if e["verb"] == "create")
    read = next(e for e in events if e["verb"] == "get")
    assert create["level"] == "RequestResponse"
    assert create["requestObject"]["data"]["marker"] == marker
    assert read["level"] == "Metadata"
    assert "responseObject" not in read
    assert [e["user"]["username"] for e in events if e["verb"] == "get"] == [GATEWAY_USER]  # type: ignore[index]


def test_the_clusters_own_writes_are_audited_without_bodies(
    cluster: Cluster, api: ApiClient, namespace: str
) -> None:
    """The controllers' answer to a write (here the ReplicaSet the deployment controller makes) is
    recorded with who made it, not its body."""
    if cluster.audit_log is None:
        pytest.skip("reused cluster without OASIS_TEST_AUDIT_LOG")
    AppsV1Api(api).create_namespaced_deployment(namespace, _deployment("audited"))

    def replicaset_created() -> list[dict[str, object]]:
        found = []
        for line in cluster.audit_log.read_text().splitlines():  # type: ignore[union-attr]
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            mine = ref.get("namespace") == namespace and ref.get("resource") == "replicasets"
            if mine and event["verb"] == "create":
                found.append(event)
        return found

    created = wait_for(replicaset_created, timeout=30, what="the ReplicaSet's audit entry")
    assert created[0]["user"]["username"] == "system:kube-controller-manager"  # type: ignore[index]
    assert created[0]["level"] == "Metadata"
    assert "requestObject" not in created[0]


def _etcd_version(port: int, cafile: str | None, cert: tuple[str, str] | None) -> str:
    ctx = ssl.create_default_context(cafile=cafile) if cafile else ssl._create_unverified_context()  # noqa: S323
    if cert:
        ctx.load_cert_chain(*cert)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return tls.recv(4096).decode(errors="replace")


def test_etcd_answers_only_the_api_server(cluster: Cluster) -> None:
    """A local process without etcd's client certificate cannot read or write the sandbox state."""
    if cluster.plane is None:
        pytest.skip("reused cluster: its etcd is not ours to inspect")
    state = cluster.plane.read_state()
    assert state is not None
    pki = cluster.plane.pki
    port = state.etcd_client_port
    with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
        _etcd_version(port, str(pki.etcd_ca_cert), None)  # TLS, but no client certificate
    with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
        _etcd_version(port, None, (str(pki.admin_cert), str(pki.admin_key)))  # the Kubernetes admin cert
    with socket.create_connection(("127.0.0.1", port), timeout=5) as plain:  # plain HTTP gets no answer
        plain.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"etcdserver" not in plain.recv(4096)
    ok = _etcd_version(port, str(pki.etcd_ca_cert), (str(pki.etcd_client_cert), str(pki.etcd_client_key)))
    assert "etcdserver" in ok
    assert oct(cluster.plane.run_dir.stat().st_mode & 0o777) == "0o700"
    assert all(oct(k.stat().st_mode & 0o777) == "0o600" for k in pki.root.glob("*.key"))


def test_server_and_kubectl_are_the_selected_release(cluster: Cluster) -> None:
    if cluster.plane is None:
        pytest.skip("reused cluster: its release is not ours")
    got = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    release = cluster.plane.release
    assert got["serverVersion"]["gitVersion"] == release.kubernetes
    assert got["serverVersion"]["minor"].rstrip("+") == str(release.minor)
    assert got["clientVersion"]["gitVersion"] == release.kubernetes  # kubectl built with the server
    served = cluster.kubectl("api-versions").stdout.split()
    for current in ("policy/v1", "autoscaling/v2", "batch/v1", "discovery.k8s.io/v1"):
        assert current in served


def test_server_side_apply_field_managers_reach_the_snapshot(api: ApiClient, namespace: str) -> None:
    """What the agent's client applied, and with which manager, is kept beside the normalised object."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}}
    path = f"/api/v1/namespaces/{namespace}/configmaps/applied"
    apply = {"fieldManager": "agent-kubectl", "force": "true"}
    request(api, "PATCH", path, body, query=apply, content_type="application/apply-patch+yaml")
    request(api, "PATCH", path, {"data": {"extra": "x"}}, query={"fieldManager": "other-editor"},
            content_type="application/merge-patch+json")  # fmt: skip
    obj = request(api, "GET", path)
    managers = {m.manager: m for m in field_managers(obj)}
    assert managers["agent-kubectl"].operation == "Apply"
    assert managers["agent-kubectl"].fields == {"f:data": {"f:k": {}}}
    assert managers["other-editor"].operation == "Update"
    assert managers["other-editor"].fields == {"f:data": {"f:extra": {}}}
    assert "managedFields" not in normalise(obj, {})["metadata"]
