"""Real kubectl clients (the server's release, the newest from PyPI) through the gateway, vs the record."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from tests.cluster_fixtures import KUBECTLS
from tests.integration.gateway.conftest import Door, find
from tests.integration.gateway.world import current_pod_hash

GENERATIONS = pytest.mark.parametrize("kubectl", list(KUBECTLS.values()), ids=list(KUBECTLS))


@GENERATIONS
def test_get_list_and_yaml_show_declared_names(door: Door, kubectl: str, api: ApiClient) -> None:
    # The pods the ReplicaSet controller named after the Deployment's current revision, both replicas.
    pod_hash = current_pod_hash(api, door.sandbox("default"), "api-service")
    mark = door.mark()
    pods = door.kubectl(kubectl, "get", "pods", "-o", "name")
    assert pods.returncode == 0, pods.stderr
    assert len(pods.stdout.split()) == 2
    assert all(p.startswith(f"pod/api-service-{pod_hash}-") for p in pods.stdout.split())
    dep = door.kubectl(kubectl, "get", "deployment", "api-service", "-o", "json")
    assert json.loads(dep.stdout)["metadata"]["namespace"] == "default"
    entries = door.since(mark)
    listed = find(entries, verb="list", resource="pods", namespace="default")
    assert listed.sandbox_namespace == door.sandbox("default")
    assert listed.response_code == 200
    assert listed.response_bytes
    got = find(entries, verb="get", resource="deployments", group="apps", name="api-service")
    assert got.response_code == 200
    assert got.path.startswith("/apis/apps/v1/namespaces/default/deployments/api-service")


@GENERATIONS
def test_describe_reads_events_through_translated_selectors(door: Door, kubectl: str) -> None:
    pods = door.kubectl(kubectl, "get", "pods", "-o", "name").stdout.split()
    crashing = next(p for p in pods if _restarts(door, kubectl, p) > 0).split("/")[1]
    mark = door.mark()
    described = door.kubectl(kubectl, "describe", "pod", crashing)
    assert described.returncode == 0, described.stderr
    assert re.search(r"^Namespace:\s+default$", described.stdout, re.MULTILINE)
    assert re.search(r"^Node:\s+worker-1/10.0.0.11$", described.stdout, re.MULTILINE)
    assert "Back-off restarting failed container" in described.stdout
    events = find(door.since(mark), verb="list", resource="events")
    assert "involvedObject.namespace=default" in events.field_selector
    assert f"involvedObject.name={crashing}" in events.field_selector
    assert events.response_code == 200


@GENERATIONS
def test_all_namespaces_and_cluster_lists_show_only_this_environment(door: Door, kubectl: str) -> None:
    mark = door.mark()
    every = door.kubectl(kubectl, "get", "pods", "-A", "--no-headers")
    namespaces = sorted({line.split()[0] for line in every.stdout.splitlines()})
    assert namespaces == ["default", "prod"]
    ns = door.kubectl(kubectl, "get", "namespaces", "--no-headers")
    assert sorted(line.split()[0] for line in ns.stdout.splitlines()) == ["default", "monitoring", "prod"]
    nodes = door.kubectl(kubectl, "get", "nodes", "--no-headers")
    assert sorted(line.split()[0] for line in nodes.stdout.splitlines()) == ["worker-1", "worker-2"]
    missing = door.kubectl(kubectl, "get", "namespace", "kube-system")
    assert missing.returncode == 1
    assert 'namespaces "kube-system" not found' in missing.stderr
    entries = door.since(mark)
    assert find(entries, verb="list", resource="pods", namespace=None).response_code == 200
    assert find(entries, verb="get", resource="namespaces", name="kube-system").response_code == 404


@GENERATIONS
def test_out_of_zone_write_is_refused_by_the_real_api_server(
    door: Door, kubectl: str, api: ApiClient
) -> None:
    mark = door.mark()
    result = door.kubectl(kubectl, "scale", "deployment", "payments", "-n", "prod", "--replicas=0")
    assert result.returncode == 1
    assert "Forbidden" in result.stderr
    assert 'cannot patch resource "deployments/scale"' in result.stderr or "cannot" in result.stderr
    entry = find(door.since(mark), resource="deployments", subresource="scale", namespace="prod")
    assert entry.response_code == 403
    assert entry.sandbox_namespace == door.sandbox("prod")
    apps: Any = AppsV1Api(api)
    assert apps.read_namespaced_deployment("payments", door.sandbox("prod")).spec.replicas == 2


@GENERATIONS
def test_undeclared_namespace_answers_like_rbac(door: Door, kubectl: str) -> None:
    unknown = door.kubectl(kubectl, "get", "pods", "-n", "kube-system")
    no_rights = door.kubectl(kubectl, "get", "pods", "-n", "monitoring")
    assert unknown.returncode == no_rights.returncode == 1
    assert 'cannot list resource "pods" in API group "" in the namespace "kube-system"' in unknown.stderr
    assert 'cannot list resource "pods" in API group "" in the namespace "monitoring"' in no_rights.stderr


@GENERATIONS
def test_logs_from_fixtures(door: Door, kubectl: str) -> None:
    pods = door.kubectl(kubectl, "get", "pods", "-o", "name").stdout.split()
    mark = door.mark()
    tail = door.kubectl(kubectl, "logs", "deployment/api-service", "--tail=1")
    assert tail.stdout == "ERROR: NullPointerException in OrderHandler.process()\n"
    since = door.kubectl(kubectl, "logs", pods[0], "--since=1h", "-c", "api-service")
    assert since.stdout.splitlines()[0] == "INFO starting api-service 1.4.2"
    crashed = next(p for p in pods if _restarts(door, kubectl, p) > 0)
    previous = door.kubectl(kubectl, "logs", crashed, "--previous")
    assert previous.stdout.splitlines()[-1] == "FATAL config key DB_URL missing"
    wrong = door.kubectl(kubectl, "logs", pods[0], "-c", "sidecar")
    assert wrong.returncode == 1
    assert "container sidecar is not valid" in wrong.stderr
    refused = door.kubectl(kubectl, "logs", "deployment/payments", "-n", "monitoring")
    assert refused.returncode == 1
    entries = door.since(mark)
    assert find(entries, resource="pods", subresource="log", namespace="default").response_code == 200


def _restarts(door: Door, kubectl: str, pod: str) -> int:
    out = door.kubectl(kubectl, "get", pod, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
    return int(out.stdout or 0)


def _rolled_out(door: Door, kubectl: str) -> None:
    status = door.kubectl(
        kubectl, "rollout", "status", "deployment/api-service", "--timeout=90s", timeout=100
    )
    assert status.returncode == 0, status.stderr
    assert 'deployment "api-service" successfully rolled out' in status.stdout


@GENERATIONS
def test_writes_in_scope(door: Door, kubectl: str, api: ApiClient) -> None:
    apps: Any = AppsV1Api(api)
    ns = door.sandbox("default")
    mark = door.mark()
    assert door.kubectl(kubectl, "scale", "deployment/api-service", "--replicas=3").returncode == 0
    assert apps.read_namespaced_deployment("api-service", ns).spec.replicas == 3
    merge = door.kubectl(
        kubectl,
        "patch",
        "deployment",
        "api-service",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"tier":"web"}}}',
    )
    assert merge.returncode == 0, merge.stderr
    jsonp = door.kubectl(
        kubectl,
        "patch",
        "deployment",
        "api-service",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":2}]',
    )
    assert jsonp.returncode == 0, jsonp.stderr
    strategic = door.kubectl(
        kubectl,
        "patch",
        "deployment",
        "api-service",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"api-service",'
        '"env":[{"name":"LOG_LEVEL","value":"debug"}]}]}}}}',
    )
    assert strategic.returncode == 0, strategic.stderr
    dep = apps.read_namespaced_deployment("api-service", ns)
    assert dep.metadata.labels["tier"] == "web"
    assert dep.spec.replicas == 2
    container = dep.spec.template.spec.containers[0]
    assert "LOG_LEVEL" in {e.name for e in container.env}
    assert container.image.startswith("registry.local/api:")  # merged into, not replaced
    before_restart = door.mark()
    restart = door.kubectl(kubectl, "rollout", "restart", "deployment/api-service")
    assert restart.returncode == 0, restart.stderr
    annotations = apps.read_namespaced_deployment("api-service", ns).spec.template.metadata.annotations
    assert "kubectl.kubernetes.io/restartedAt" in annotations
    restart_patch = find(door.since(before_restart), verb="patch", resource="deployments", name="api-service")
    assert "kubectl.kubernetes.io/restartedAt" in json.dumps(restart_patch.request_body)
    before_status = door.mark()
    # The deployment controller, the scheduler and kwok carry the rollout out; `rollout status` only reads.
    _rolled_out(door, kubectl)
    watched = [e for e in door.since(before_status) if e.resource == "deployments"]
    assert watched
    assert {e.verb for e in watched} <= {"get", "list", "watch"}
    # The previous release's revision, found as an agent finds it: the ReplicaSet with that image.
    sets = json.loads(
        door.kubectl(kubectl, "get", "replicasets", "-l", "app=api-service", "-o", "json").stdout
    )
    previous = [
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        for rs in sets["items"]
        if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/api:0.9.0"
    ]
    assert len(previous) == 1, sets
    before_undo = door.mark()
    undo = door.kubectl(kubectl, "rollout", "undo", "deployment/api-service", f"--to-revision={previous[0]}")
    assert undo.returncode == 0, undo.stderr
    image = apps.read_namespaced_deployment("api-service", ns).spec.template.spec.containers[0].image
    assert image == "registry.local/api:0.9.0"
    undo_entries = door.since(before_undo)
    assert find(undo_entries, verb="list", resource="replicasets", namespace="default").response_code == 200
    undo_patch = find(undo_entries, verb="patch", resource="deployments", name="api-service")
    assert "registry.local/api:0.9.0" in json.dumps(undo_patch.request_body)
    _rolled_out(door, kubectl)
    # A plain undo goes back to the revision before, the current release: where the next test starts.
    forward = door.kubectl(kubectl, "rollout", "undo", "deployment/api-service")
    assert forward.returncode == 0, forward.stderr
    image = apps.read_namespaced_deployment("api-service", ns).spec.template.spec.containers[0].image
    assert image == "registry.local/api:1.4.2"
    _rolled_out(door, kubectl)
    entries = door.since(mark)
    patches = [e for e in entries if e.verb == "patch" and e.resource == "deployments"]
    assert {e.response_code for e in patches} == {200}
    assert any(e.subresource == "scale" for e in patches)
    assert any(isinstance(e.request_body, list) for e in patches)  # the JSON patch, as sent
    assert find(entries, verb="get", resource="deployments", name="api-service").namespace == "default"


@GENERATIONS
def test_apply_client_and_server_side_and_delete(
    door: Door, kubectl: str, api: ApiClient, tmp_path: Any
) -> None:
    core: Any = CoreV1Api(api)
    ns = door.sandbox("default")
    manifest = tmp_path / "cm.yaml"
    name = "feature-flags-" + kubectl.split("/")[-2][:3].replace(".", "")
    manifest.write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n"
        "data:\n  checkout: 'on'\n"
    )
    mark = door.mark()
    client = door.kubectl(kubectl, "apply", "-f", str(manifest))
    assert client.returncode == 0, client.stderr
    manifest.write_text(manifest.read_text().replace("'on'", "'off'"))
    server = door.kubectl(kubectl, "apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert server.returncode == 0, server.stderr
    assert core.read_namespaced_config_map(name, ns).data == {"checkout": "off"}
    shown = door.kubectl(kubectl, "get", "configmap", name, "-o", "yaml")
    assert "namespace: default" in shown.stdout
    deleted = door.kubectl(kubectl, "delete", "-f", str(manifest))
    assert deleted.returncode == 0, deleted.stderr
    entries = door.since(mark)
    assert find(entries, verb="create", resource="configmaps").response_code == 201
    ssa = find(entries, verb="patch", resource="configmaps", name=name)
    assert ssa.request_body["metadata"]["namespace"] == "default"  # recorded as the agent sent it
    assert find(entries, verb="delete", resource="configmaps", name=name).response_code == 200


@GENERATIONS
def test_auth_can_i_and_token_minting_refused(door: Door, kubectl: str) -> None:
    mark = door.mark()
    yes = door.kubectl(kubectl, "auth", "can-i", "patch", "deployments")
    assert yes.stdout.strip() == "yes"
    no = door.kubectl(kubectl, "auth", "can-i", "delete", "pods", "-n", "prod")
    assert no.stdout.strip() == "no"
    review = find(door.since(mark), resource="selfsubjectaccessreviews")
    assert review.response_code == 201
    # kubectl sends access reviews as protobuf; the record keeps the bytes
    assert review.request_body["encoding"] == "protobuf"
    mark = door.mark()
    escalate = door.kubectl(kubectl, "get", "secrets", "--as=system:admin", "--as-group=system:masters")
    assert escalate.returncode == 1
    assert 'cannot impersonate resource "users"' in escalate.stderr
    attempts = [e for e in door.since(mark) if e.note == "impersonation of 'system:admin' requested"]
    assert attempts
    assert {e.response_code for e in attempts} == {403}
    if kubectl == KUBECTLS["current"]:
        mark = door.mark()
        token = door.kubectl(kubectl, "create", "token", "agent")
        assert token.returncode == 1
        assert "is forbidden" in token.stderr
        assert find(door.since(mark), resource="serviceaccounts", subresource="token").response_code == 403


@GENERATIONS
def test_watch_streams_translated_events(door: Door, kubectl: str, api: ApiClient) -> None:
    core: Any = CoreV1Api(api)
    ns = door.sandbox("default")
    generation = next(name for name, path in KUBECTLS.items() if path == kubectl)
    touched = "touched-" + "".join(c for c in generation if c.isalnum())
    mark = door.mark()
    env = {"KUBECONFIG": str(door.kubeconfig), "HOME": str(door.kubeconfig.parent), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [
            kubectl,
            "get",
            "pods",
            "-w",
            "-o",
            "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,"
            "NODE:.spec.nodeName,MARK:.metadata.labels.mark",
            "--no-headers",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(2.0)
        pod = next(
            p.metadata.name for p in core.list_namespaced_pod(ns).items if not p.metadata.deletion_timestamp
        )
        core.patch_namespaced_pod(pod, ns, {"metadata": {"labels": {"mark": touched}}})
        time.sleep(1.5)
        open_watch = find(door.since(mark), verb="watch", resource="pods", namespace="default")
        assert (open_watch.response_code, open_watch.note) == (200, "stream open")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    lines = [line.split() for line in out.splitlines()]
    assert any(line[1] == pod and line[3] == touched for line in lines), out
    assert all(line[0] == "default" and line[2] == "worker-1" for line in lines), out
    watch = find(door.since(mark), verb="watch", resource="pods", namespace="default")
    assert watch.sandbox_namespace == ns
    assert watch.request_body is None


@GENERATIONS
def test_discovery_hides_the_operator_group_and_shows_the_gateways(door: Door, kubectl: str) -> None:
    # kubectl asks for aggregated discovery first (since 1.26); whatever form it gets, the operator's own
    # group never shows and the metrics API the gateway serves does.
    versions = door.kubectl(kubectl, "api-versions")
    assert versions.returncode == 0, versions.stderr
    listed = versions.stdout.split()
    assert "metrics.k8s.io/v1beta1" in listed
    assert "apps/v1" in listed
    assert not [v for v in listed if v.startswith("oasis.")], listed
    resources = door.kubectl(kubectl, "api-resources", "-o", "name")
    assert resources.returncode == 0, resources.stderr
    assert not [r for r in resources.stdout.split() if "oasis" in r]


@GENERATIONS
def test_a_cold_kubectl_discovers_in_two_requests(door: Door, kubectl: str, tmp_path: Path) -> None:
    # Aggregated discovery through the gateway: `/api` and `/apis` carry every group's resources, so a
    # kubectl with an empty cache asks nothing per group version; what it then lists is the same.
    mark = door.mark()
    listed = door.kubectl(kubectl, "--cache-dir", str(tmp_path / "cache"), "get", "deployments,hpa,pods")
    assert listed.returncode == 0, listed.stderr
    entries = door.since(mark)
    discovery = [e.path.split("?")[0] for e in entries if not e.resource]
    assert discovery == ["/api", "/apis"], [e.path for e in entries]
    assert [e.resource for e in entries if e.resource] == ["deployments", "horizontalpodautoscalers", "pods"]
    assert "api-service" in listed.stdout
    top = door.kubectl(kubectl, "--cache-dir", str(tmp_path / "cache"), "top", "pods", "--no-headers")
    assert top.returncode == 0, top.stderr  # metrics.k8s.io, served by the gateway, is in that discovery


@GENERATIONS
def test_top_reads_declared_usage(door: Door, kubectl: str) -> None:
    mark = door.mark()
    nodes = door.kubectl(kubectl, "top", "nodes", "--no-headers")
    assert nodes.returncode == 0, nodes.stderr
    usage = {line.split()[0]: line.split()[1:3] for line in nodes.stdout.splitlines()}
    assert usage == {"worker-1": ["3880m", "97%"], "worker-2": ["800m", "20%"]}
    pods = door.kubectl(kubectl, "top", "pods", "--no-headers")
    assert {tuple(line.split()[1:]) for line in pods.stdout.splitlines()} == {("950m", "250Mi")}
    refused = door.kubectl(kubectl, "top", "pods", "-n", "monitoring")
    assert refused.returncode == 1
    assert 'cannot list resource "pods" in API group "" in the namespace "monitoring"' in refused.stderr
    entries = door.since(mark)
    assert find(entries, group="metrics.k8s.io", resource="nodes", verb="list").response_code == 200
    assert find(entries, group="metrics.k8s.io", resource="pods", namespace="monitoring").response_code == 403


@GENERATIONS
def test_each_kubectl_invocation_is_recorded_with_its_own_session(door: Door, kubectl: str) -> None:
    mark = door.mark()
    # The agent's role lists some of kubectl's `all` category and not others: refused lists are
    # recorded like the rest, one list per resource of the category.
    door.kubectl(kubectl, "get", "all", "-n", "default")
    first = [e for e in door.since(mark) if e.resource]
    assert {e.resource for e in first} >= {"pods", "services", "deployments", "replicationcontrollers"}
    sessions = {e.client_session for e in first}
    assert len(sessions) == 1
    assert None not in sessions
    again = door.mark()
    assert door.kubectl(kubectl, "get", "pods", "-n", "default").returncode == 0
    second = {e.client_session for e in door.since(again) if e.resource}
    assert len(second) == 1
    assert second.isdisjoint(sessions)
