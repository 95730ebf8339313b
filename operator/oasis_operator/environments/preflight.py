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
from oasis_operator.kube import request, resource_path, served_versions
from oasis_operator.localcluster.kwok import STAGE_GROUP
from oasis_operator.sandbox.teardown import ENV_LABEL

PROBE_LABEL = f"{API_GROUP}/preflight-probe"
CONTROLLER_WAIT = 5.0


def _probe_deployment(namespace: str) -> dict[str, Any]:
    labels = {"app": "probe"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "probe", "image": "registry.invalid/probe:1"}]},
            },
        },
    }


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
    declared["state_injection"] = _probe_world(api, prefix)
    return declared


def _probe_world(api: ApiClient, prefix: str) -> Declared:
    """The twin needs a cluster whose controllers answer (a probe Deployment gets its ReplicaSet) and
    whose nodes are kwok's (the Stage resource kwok reads is served, and every Node is an environment's
    own: a node made otherwise has a real kubelet, or kwok would run twin pods beside them)."""
    try:
        stages = served_versions(api, STAGE_GROUP)
    except (ApiException, HTTPError, OSError) as exc:
        return Declared(value=False, reason=f"could not read the sandbox cluster's API groups: {exc}")
    if not stages:
        return Declared(
            value=False,
            reason=f"the sandbox cluster serves no {STAGE_GROUP} Stages: its nodes are not played by kwok; "
            "point spec.environment at a sandbox control plane made for it (`oasis cluster up`, or the "
            "chart's sandbox plane)",
        )
    try:
        query = {"labelSelector": f"!{ENV_LABEL}"}
        foreign = request(api, "GET", resource_path("Node"), query=query)["items"]
    except (ApiException, HTTPError, OSError) as exc:
        return Declared(value=False, reason=f"could not list the sandbox cluster's nodes: {exc}")
    if foreign:
        names = ", ".join(sorted(n["metadata"]["name"] for n in foreign)[:5])
        return Declared(
            value=False,
            reason=f"the sandbox cluster has nodes no environment made ({names}): their kubelets would run "
            "scenario pods for real; point spec.environment at a sandbox control plane whose only nodes are "
            "the twin's (`oasis cluster up`, or the chart's sandbox plane)",
        )
    namespace = f"{prefix}-probe-{secrets.token_hex(3)}"
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {PROBE_LABEL: "1"}},
    }
    sets: list[Any] = []
    try:
        request(api, "POST", resource_path("Namespace"), ns)
        request(api, "POST", resource_path("Deployment", namespace), _probe_deployment(namespace))
        deadline = time.monotonic() + CONTROLLER_WAIT
        while not sets and time.monotonic() < deadline:
            time.sleep(0.1)
            sets = request(api, "GET", resource_path("ReplicaSet", namespace))["items"]
    except (ApiException, HTTPError, OSError) as exc:
        return Declared(value=False, reason=f"could not write a probe workload: {exc}")
    finally:
        # A probe namespace left behind carries the probe label for the orphan collector.
        with contextlib.suppress(ApiException, HTTPError, OSError):
            request(api, "DELETE", resource_path("Namespace", name=namespace))
    if not sets:
        return Declared(
            value=False,
            reason=f"the sandbox cluster runs no workload controllers (a probe Deployment got no ReplicaSet "
            f"within {CONTROLLER_WAIT:.0f}s): start kube-controller-manager with the standard controllers",
        )
    return Declared(
        value=True, reason="its controllers answered a probe workload and kwok's Stages are served"
    )
