"""Every object the chart renders is accepted by the real API server (server-side dry run)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.kube import apply_crds, request
from tests.cluster_fixtures import Cluster, wait_for
from tests.integration.chart.chart_support import kubectl_stdin
from tests.unit.chart.chart_render import Manifest, render, render_for_cluster

pytestmark = pytest.mark.cluster

VALUE_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    # With the opt-in pre-delete hook (a Job and its RBAC), which the default leaves out.
    "namespaced": {"watch": {"clusterWide": False}, "cleanupOnUninstall": {"enabled": True}},
    "ingress-tls": {
        "gateway": {
            "tls": {"secretName": "gw-tls"},
            "ingress": {"enabled": True, "host": "oasis.example.test", "tlsSecretName": "gw-tls"},
        }
    },
    "network-policies": {"networkPolicies": {"enabled": True, "gatewayFrom": [{"podSelector": {}}]}},
    "sandbox-host": {"sandbox": {"mode": "host"}, "networkPolicies": {"enabled": True}},
    "sandbox-external": {"sandbox": {"mode": "external", "kubeconfigSecret": {"name": "sandbox-kubeconfig"}}},
    # Isolation none refused at apply time (the policy's other rule), in the watched namespace only.
    "sandboxed-agents-namespaced": {
        "tenancy": {"commandAgents": "sandboxed"},
        "watch": {"clusterWide": False},
    },
    # The provider API behind its Service; the image pinned by digest; OpenShift leaving the uids out.
    "provider-api-digest-openshift": {
        "providerApi": {"enabled": True, "tokenSecret": {"name": "runner-token"}, "tlsSecretName": "api-tls"},
        "image": {"digest": "sha256:" + "0" * 64},
        "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
        "networkPolicies": {"enabled": True, "providerApiFrom": [{"podSelector": {}}]},
    },
}


def dry_run(cluster: Cluster, objects: list[Manifest], namespace: str) -> list[str]:
    """`kubectl apply --dry-run=server` of every object; the lines kubectl prints, one per object.

    Objects the chart puts in a namespace of its own (host mode: the sandbox's control namespace, which
    it renders too) go to the server with that namespace, which is created for real first: a server dry
    run of a namespaced object needs its namespace to exist.
    """
    elsewhere = sorted(
        {
            o["metadata"]["namespace"]
            for o in objects
            if o["metadata"].get("namespace", namespace) != namespace
        }
    )
    for other in elsewhere:
        rendered = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == other]
        assert rendered, f"objects in namespace {other}, which the chart does not render"
        kubectl_stdin(cluster, rendered, "apply", "-f", "-")
    lines = []
    for where in (namespace, *elsewhere):
        group = [o for o in objects if o["metadata"].get("namespace", namespace) == where]
        result = kubectl_stdin(cluster, group, "apply", "--dry-run=server", "-n", where, "-f", "-")
        lines += result.stdout.splitlines()
    return lines


@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_rendered_objects_pass_server_side_dry_run(cluster: Cluster, namespace: str, value_set: str) -> None:
    objects = render(VALUE_SETS[value_set], namespace=namespace)
    lines = dry_run(cluster, objects, namespace)
    assert len(lines) == len(objects)
    assert all(line.endswith("(server dry run)") for line in lines), lines
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "ServiceAccount", "ClusterRole", "Service"} <= kinds
    assert ("Job" in kinds) == (value_set == "namespaced")  # the cleanup hook, only when asked for
    if value_set == "default":
        assert {"StatefulSet", "ConfigMap"} <= kinds  # the sandbox control plane
    if value_set == "ingress-tls":
        assert "Ingress" in kinds
    if value_set in ("network-policies", "sandbox-host"):
        assert "NetworkPolicy" in kinds
    # The tenant guardrails: the admission policy and its binding, the tenants' aggregated roles.
    assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds
    tenant_roles = sorted(
        o["metadata"]["name"] for o in objects if o["metadata"]["name"].startswith("oasis-eval")
    )
    assert tenant_roles == ["oasis-evaluation-edit", "oasis-evaluation-view"]
    if value_set == "provider-api-digest-openshift":
        assert [
            o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("-provider-api")
        ]


SERVICE_MONITOR_CRD: Manifest = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "scope": "Namespaced",
        "names": {
            "kind": "ServiceMonitor",
            "plural": "servicemonitors",
            "singular": "servicemonitor",
            "listKind": "ServiceMonitorList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


@pytest.fixture
def service_monitor_api(api: ApiClient) -> Iterator[None]:
    """The Prometheus Operator's ServiceMonitor API, served for one test (a minimal CRD), then removed."""
    apply_crds(api, [SERVICE_MONITOR_CRD])
    yield
    request(
        api,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/servicemonitors.monitoring.coreos.com",
    )


def test_no_service_monitor_when_the_api_is_absent(cluster: Cluster, namespace: str) -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}}
    without = render_for_cluster(cluster.kubeconfig, namespace, values)
    assert "ServiceMonitor" not in {o["kind"] for o in without}
    assert "Deployment" in {o["kind"] for o in without}


def test_service_monitor_rendered_when_the_api_is_served(
    cluster: Cluster, namespace: str, service_monitor_api: None
) -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}}
    # Discovery can lag a fresh CRD by a moment.
    objects = wait_for(
        lambda: (
            (o := render_for_cluster(cluster.kubeconfig, namespace, values))
            and any(x["kind"] == "ServiceMonitor" for x in o)
            and o
        ),
        timeout=30,
        what="ServiceMonitor in the cluster-aware render",
    )
    monitor = next(o for o in objects if o["kind"] == "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "30s"}]
    assert monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "metrics"
    lines = dry_run(cluster, [monitor], namespace)
    assert lines == [
        f"servicemonitor.monitoring.coreos.com/{monitor['metadata']['name']} created (server dry run)"
    ]
