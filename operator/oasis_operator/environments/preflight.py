"""Live probes behind the conformance declaration (they run against the sandbox cluster)."""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from oasis_operator import API_GROUP
from oasis_operator.environments.conformance import SERVER_PREFIX, Declared, base_declaration
from oasis_operator.kube import request, resource_path

PROBE_LABEL = f"{API_GROUP}/preflight-probe"
CONTROLLER_WAIT = 2.0


def _probe_objects(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {"app": "probe"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "probe", "image": "registry.invalid/probe:1"}]},
            },
        },
    }
    status = {"status": {"observedGeneration": 1, "replicas": 1, "unavailableReplicas": 1}}
    return deployment, status


def server_version(version: dict[str, Any]) -> str:
    """`kube-apiserver v1.37.2 (linux/amd64)` from the server's `/version` answer."""
    git = str(version.get("gitVersion") or "").strip()
    if not git:
        return "a kube-apiserver that did not say its version"
    platform = str(version.get("platform") or "").strip()
    return f"{SERVER_PREFIX}{git}" + (f" ({platform})" if platform else "")


def self_check(api: ApiClient, prefix: str, gateway_running: bool) -> dict[str, Declared]:
    """The declaration, with each claim the probes can test confirmed or withdrawn (with the reason)."""
    declared = base_declaration()
    try:
        version = request(api, "GET", "/version")
    except (ApiException, HTTPError, OSError) as exc:
        reason = f"the sandbox API server did not answer: {exc}"
        declared["environment_type"] = Declared(value="unreachable", reason=reason)
        declared["state_injection"] = Declared(value=False, reason=reason)
        return declared
    declared["environment_type"] = Declared(value="kubernetes-cluster", reason=server_version(version))
    if not gateway_running:
        declared["audit_policy_installation"] = Declared(
            value=False, reason="the agent gateway is not running"
        )
        declared["evidence_sources_available"] = Declared(
            value=["resource_state", "value_containment", "state_diff"],
            reason="no audit_log: the agent gateway, which records it, is not running",
        )
    declared["state_injection"] = _probe_twin(api, prefix)
    return declared


def _probe_twin(api: ApiClient, prefix: str) -> Declared:
    """A Deployment with written status must keep it and must not get a ReplicaSet (no controllers)."""
    namespace = f"{prefix}-probe-{secrets.token_hex(3)}"
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {PROBE_LABEL: "1"}},
    }
    deployment, status = _probe_objects(namespace)
    try:
        request(api, "POST", resource_path("Namespace"), ns)
        request(api, "POST", resource_path("Deployment", namespace), deployment)
        path = resource_path("Deployment", namespace, "probe") + "/status"
        request(api, "PATCH", path, status, content_type="application/merge-patch+json")
        time.sleep(CONTROLLER_WAIT)
        sets = request(api, "GET", resource_path("ReplicaSet", namespace))["items"]
        after = request(api, "GET", resource_path("Deployment", namespace, "probe"))
    except (ApiException, HTTPError, OSError) as exc:
        return Declared(value=False, reason=f"could not write a probe workload and its status: {exc}")
    finally:
        # A probe namespace left behind carries the probe label for the orphan collector.
        with contextlib.suppress(ApiException, HTTPError, OSError):
            request(api, "DELETE", resource_path("Namespace", name=namespace))
    if sets:
        return Declared(
            value=False,
            reason="the sandbox cluster runs workload controllers (a probe Deployment got a ReplicaSet); "
            "they would overwrite the twin: point spec.environment at a dedicated sandbox control plane",
        )
    if after.get("status", {}).get("unavailableReplicas") != 1:
        return Declared(value=False, reason="status written through the status subresource did not stay")
    return Declared(value=True, reason="probe workload kept its written status and got no ReplicaSet")
