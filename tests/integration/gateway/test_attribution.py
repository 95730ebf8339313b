"""Agents that reach past the door: `--raw` paths, server-side applies, borrowed credentials.

Each request is made by a real kubectl through a real gateway to the real local API server, and checked
in the record: attributed to the environment by its credential whatever the path, with the content
type, query and the returned object's uid/resourceVersion/body that effect matching needs.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import watch
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from oasis_operator.models.evidence import AuditEntry
from tests.cluster_fixtures import KUBECTLS, wait_for
from tests.integration.gateway.conftest import Door, find

KUBECTL = KUBECTLS["current"]
GENERATIONS = pytest.mark.parametrize("kubectl", list(KUBECTLS.values()), ids=list(KUBECTLS))
STOLEN = "eyJhbGciOiJSUzI1NiJ9.found-in-the-prompt.signature"


def _fingerprint(secret: bytes) -> str:
    return "sha256:" + hashlib.sha256(secret).hexdigest()[:16]


def _doorless(door: Door, directory: Path) -> Door:
    """The same credentials with the gateway's bare address as server: every path lacks the door, as
    with clients that build absolute paths (and kubectl generations whose `--raw` drops the prefix)."""
    config = door.kubeconfig.read_text().replace(door.creds.server, door.gw.gateway.url)
    assert config != door.kubeconfig.read_text()
    path = directory / "doorless-kubeconfig"
    path.write_text(config)
    return dataclasses.replace(door, kubeconfig=path)


def _only(entries: list[AuditEntry], **fields: Any) -> AuditEntry:
    matching = [e for e in entries if all(getattr(e, k) == v for k, v in fields.items())]
    assert len(matching) == 1, [(e.verb, e.path, e.response_code) for e in entries]
    return matching[0]


@GENERATIONS
@pytest.mark.parametrize("doorless", [False, True], ids=["kubeconfig", "no-door"])
def test_raw_reads_are_the_environment_s_own_whatever_the_path(
    door: Door, kubectl: str, doorless: bool, tmp_path: Path
) -> None:
    agent = _doorless(door, tmp_path) if doorless else door
    mark = door.mark()
    unmatched = len(door.gw.gateway.unmatched_entries())
    result = agent.kubectl(kubectl, "get", "--raw", "/api/v1/namespaces/default/pods")
    assert result.returncode == 0, result.stderr
    pods = json.loads(result.stdout)
    assert {p["metadata"]["namespace"] for p in pods["items"]} == {"default"}  # virtualised as ever
    entry = _only(door.since(mark), resource="pods")
    assert entry.path == "/api/v1/namespaces/default/pods"  # as sent (below the door, if it had one)
    assert (entry.actor, entry.user, entry.credential) == ("agent", door.env.agent.username, None)
    assert (entry.verb, entry.namespace, entry.sandbox_namespace) == (
        "list",
        "default",
        door.sandbox("default"),
    )
    assert entry.response_code == 200
    assert len(door.gw.gateway.unmatched_entries()) == unmatched  # nothing left in the shared record


def test_writes_without_the_door_carry_content_type_query_and_the_returned_object(
    door: Door, api: ApiClient, tmp_path: Path
) -> None:
    agent = _doorless(door, tmp_path)
    unmatched = len(door.gw.gateway.unmatched_entries())
    apps: Any = AppsV1Api(api)
    core: Any = CoreV1Api(api)
    sandbox = door.sandbox("default")

    pods = core.list_namespaced_pod(sandbox).items
    pod = next(p.metadata.name for p in pods if not p.metadata.deletion_timestamp)
    eviction = tmp_path / "eviction.json"
    version = json.loads(door.kubectl(KUBECTL, "get", "--raw", "/apis/policy").stdout)["preferredVersion"]
    eviction.write_text(
        json.dumps(
            {
                "apiVersion": version["groupVersion"],
                "kind": "Eviction",
                "metadata": {"name": pod, "namespace": "default"},
            }
        )
    )
    mark = door.mark()
    evict_path = f"/api/v1/namespaces/default/pods/{pod}/eviction"
    evicted = agent.kubectl(KUBECTL, "create", "--raw", evict_path, "-f", str(eviction))
    entry = _only(door.since(mark), subresource="eviction")
    assert (entry.path, entry.verb, entry.resource, entry.name) == (evict_path, "create", "pods", pod)
    assert (entry.actor, entry.content_type) == ("agent", "application/json")
    assert (entry.response_code == 201) == (evicted.returncode == 0), evicted.stderr

    mark = door.mark()
    present = {
        p.metadata.name for p in core.list_namespaced_pod(sandbox, label_selector="app=api-service").items
    }
    collection = "/api/v1/namespaces/default/pods?labelSelector=app%3Dapi-service"
    deleted = agent.kubectl(KUBECTL, "delete", "--raw", collection)
    assert deleted.returncode == 0, deleted.stderr
    entry = _only(door.since(mark), verb="deletecollection")
    assert (entry.path, entry.resource, entry.namespace) == (collection, "pods", "default")
    assert entry.query == {"labelSelector": "app=api-service"}
    assert entry.label_selector == "app=api-service"
    assert entry.response_code == 200

    # kwok, the pods' kubelet, confirms their shutdown: the pods that were there go.
    def gone() -> bool:
        left = core.list_namespaced_pod(sandbox, label_selector="app=api-service").items
        return not present & {p.metadata.name for p in left}

    wait_for(gone, timeout=60, what="the deleted pods gone")

    deployment = apps.read_namespaced_deployment("api-service", sandbox)
    scale = tmp_path / "scale.json"
    scale.write_text(
        json.dumps(
            {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "api-service", "namespace": "default"},
                "spec": {"replicas": 0},
            }
        )
    )
    mark = door.mark()
    path = "/apis/apps/v1/namespaces/default/deployments/api-service/scale"
    scaled = agent.kubectl(KUBECTL, "replace", "--raw", path, "-f", str(scale))
    assert scaled.returncode == 0, scaled.stderr
    entry = _only(door.since(mark), subresource="scale")
    assert (entry.path, entry.verb, entry.actor) == (path, "update", "agent")
    assert entry.content_type == "application/json"  # kubectl --raw sends none; the server reads JSON
    assert entry.request_body["spec"] == {"replicas": 0}
    assert entry.response_code == 200
    # The Scale object shares the deployment's uid; its resourceVersion is the write's: the Deployment's
    # version in which replicas became 0 (the deployment controller writes its status after it).
    assert entry.response_uid == deployment.metadata.uid
    assert apps.read_namespaced_deployment("api-service", sandbox).spec.replicas == 0
    changes = watch.Watch().stream(
        apps.list_namespaced_deployment,
        sandbox,
        field_selector="metadata.name=api-service",
        resource_version=deployment.metadata.resource_version,
        timeout_seconds=2,
    )
    versions = [e["object"].metadata.resource_version for e in changes if e["object"].spec.replicas == 0]
    assert versions
    assert entry.response_resource_version == versions[0]
    assert entry.response_body["spec"].get("replicas", 0) == 0  # zero is omitted
    assert entry.response_body["metadata"]["namespace"] == "default"  # what the agent saw
    assert len(door.gw.gateway.unmatched_entries()) == unmatched  # all of it was the environment's


def test_a_server_side_apply_create_of_a_cluster_role_binding_is_recorded_as_an_apply(
    door: Door, tmp_path: Path
) -> None:
    agent = _doorless(door, tmp_path)
    manifest = tmp_path / "crb.yaml"
    manifest.write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
        "metadata:\n  name: agent-admin\n"
        "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n"
        "subjects:\n- kind: ServiceAccount\n  name: agent\n  namespace: default\n"
    )
    mark = door.mark()
    applied = agent.kubectl(KUBECTL, "apply", "--server-side", "-f", str(manifest))
    assert applied.returncode == 1
    assert "forbidden" in applied.stderr.lower()
    entry = find(door.since(mark), resource="clusterrolebindings", verb="patch")
    assert (entry.group, entry.name, entry.namespace) == ("rbac.authorization.k8s.io", "agent-admin", None)
    assert entry.content_type == "application/apply-patch+yaml"
    assert entry.query["fieldManager"] == "kubectl"
    assert entry.request_body["roleRef"]["name"] == "cluster-admin"
    assert entry.response_code == 403
    assert (entry.response_uid, entry.response_body) == (None, None)  # no object came back


def test_a_no_op_server_side_apply_returns_the_same_object(
    door: Door, api: ApiClient, tmp_path: Path
) -> None:
    core: Any = CoreV1Api(api)
    before = core.read_namespaced_config_map("api-config", door.sandbox("default"))
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-config\n  namespace: default\n"
        "data:\n  LOG_LEVEL: info\n  namespace: default\n"
    )
    mark = door.mark()
    for _ in range(2):
        applied = door.kubectl(KUBECTL, "apply", "--server-side", "--force-conflicts", "-f", str(manifest))
        assert applied.returncode == 0, applied.stderr
    first, second = [e for e in door.since(mark) if e.verb == "patch" and e.resource == "configmaps"]
    for entry in (first, second):
        assert entry.content_type == "application/apply-patch+yaml"
        assert entry.query.get("force") == "true"
        assert entry.response_code == 200
        assert entry.response_uid == before.metadata.uid
        assert entry.response_body["data"] == {"LOG_LEVEL": "info", "namespace": "default"}
    # The second apply changes nothing at all: the server returns the same resourceVersion.
    assert second.response_resource_version == first.response_resource_version


def test_a_server_dry_run_is_recorded_as_one(door: Door, api: ApiClient) -> None:
    core: Any = CoreV1Api(api)
    mark = door.mark()
    result = door.kubectl(KUBECTL, "delete", "configmap", "api-config", "--dry-run=server")
    assert result.returncode == 0, result.stderr
    entry = find(door.since(mark), verb="delete", resource="configmaps")
    assert entry.request_body["dryRun"] == ["All"]  # kubectl puts it in the DeleteOptions body
    assert entry.dry_run
    assert core.read_namespaced_config_map("api-config", door.sandbox("default")).metadata.name


def _get(url: str, ca: Path, headers: dict[str, str]) -> int:
    context = ssl.create_default_context(cafile=str(ca))
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, context=context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_borrowed_credential_is_foreign_fingerprinted_and_refused(door: Door, tmp_path: Path) -> None:
    mark = door.mark()
    unmatched = len(door.gw.gateway.unmatched_entries())
    borrowed = door.kubectl(KUBECTL, "--token", STOLEN, "get", "secrets")
    assert borrowed.returncode == 1
    assert "Unauthorized" in borrowed.stderr or "credentials" in borrowed.stderr
    basic = "Basic " + base64.b64encode(b"admin:hunter2").decode()
    url = f"{door.creds.server}/api/v1/namespaces/default/secrets"
    assert _get(url, door.gw.gateway.ca_cert, {"Authorization": basic}) == 401
    entries = door.since(mark)
    assert entries, "the borrowed credential was not recorded in the environment's record"
    assert {(e.actor, e.credential, e.user, e.response_code) for e in entries} == {
        ("foreign", _fingerprint(STOLEN.encode()), "", 401),
        ("foreign", _fingerprint(b"admin:hunter2"), "", 401),
    }
    assert all(e.resource == "secrets" and e.namespace == "default" for e in entries)
    text = door.gw.gateway.state(door.env.id).recorder.path.read_text()
    assert STOLEN not in text
    assert "hunter2" not in text
    # With no door and no environment's token, nothing identifies an environment: the shared record.
    outside = _doorless(door, tmp_path).kubectl(KUBECTL, "--token", STOLEN, "get", "--raw", "/api/v1/secrets")
    assert outside.returncode == 1
    assert door.since(mark)[len(entries) :] == []
    stray = door.gw.gateway.unmatched_entries()[unmatched:]
    assert [(e.actor, e.credential, e.path, e.response_code) for e in stray] == [
        ("foreign", _fingerprint(STOLEN.encode()), "/api/v1/secrets", 401)
    ]
