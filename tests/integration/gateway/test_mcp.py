"""The MCP server of an environment, driven by the official MCP client SDK through a real gateway and a
real local API server: tools listed, each tool's answer, and each tool call in the record as the agent's
own request (same RBAC, same names, same refusals as kubectl)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from oasis_operator.agents.reference.mcp_client import (
    McpConnectError,
    McpConnection,
    McpCredentials,
    credentials_from,
)
from oasis_operator.gateway.apis.store import anchor_time
from oasis_operator.models.evidence import AuditEntry
from tests.cluster_fixtures import Cluster
from tests.integration.gateway.conftest import FIXTURES, Door, find
from tests.integration.gateway.test_fixture_apis import STATE
from tests.integration.gateway.twin import GatewayThread, built_environment, write_kubeconfig

KUBERNETES_TOOLS = {
    "get", "list", "describe", "events", "logs", "apply", "patch", "delete", "scale",
    "rollout_restart", "rollout_undo", "rollout_status",
}  # fmt: skip
OBSERVABILITY_TOOLS = {
    "prometheus_query", "prometheus_query_range", "alerts", "trace_services", "traces_search", "trace_get",
    "dashboards_search", "dashboard_get",
}  # fmt: skip


@pytest.fixture(scope="module")
def door(cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    tmp = tmp_path_factory.mktemp("mcp")
    gw = GatewayThread(cluster.kubeconfig, tmp / "data", rate_limit=None)
    try:
        with built_environment(api, FIXTURES + STATE) as env:
            creds = gw.gateway.register(env)
            yield Door(gw, env, creds, write_kubeconfig(creds, tmp))
    finally:
        gw.stop()


@pytest.fixture(scope="module")
def mcp(door: Door) -> Iterator[McpConnection]:
    creds = credentials_from(door.creds.kubeconfig_yaml, door.creds.endpoints["mcp"])
    with McpConnection(creds) as connection:
        yield connection


def call(mcp: McpConnection, tool: str, **arguments: Any) -> str:
    answer = mcp.call(tool, arguments)
    assert not answer.is_error, answer.text
    return answer.text


def refused(mcp: McpConnection, tool: str, **arguments: Any) -> str:
    answer = mcp.call(tool, arguments)
    assert answer.is_error, answer.text
    return answer.text


def no_sandbox_names(door: Door, text: str) -> None:
    for binding in door.env.namespaces:
        assert binding.sandbox not in text


def by_agent(entries: list[AuditEntry]) -> list[AuditEntry]:
    assert entries, "the tool call reached the door"
    assert {e.actor for e in entries} == {"agent"}
    return entries


def test_the_url_is_handed_out_and_the_tools_are_listed(door: Door, mcp: McpConnection) -> None:
    assert door.creds.endpoints["mcp"] == f"{door.creds.server}/mcp"
    assert set(mcp.tools()) == KUBERNETES_TOOLS | OBSERVABILITY_TOOLS


def test_get_list_describe_events_logs(door: Door, mcp: McpConnection) -> None:
    mark = door.mark()
    dep = json.loads(call(mcp, "get", resource="deployment", name="api-service"))
    assert (dep["kind"], dep["metadata"]["namespace"]) == ("Deployment", "default")
    listed = json.loads(call(mcp, "list", resource="deployments,pods,configmaps", namespace="default"))
    kinds = sorted({item["kind"] for item in listed["items"]})
    assert kinds == ["ConfigMap", "Deployment", "Pod"]
    pods = [i for i in listed["items"] if i["kind"] == "Pod"]
    # The crash-looping pod has restarted (between two back-offs it runs for a moment).
    crashing = next(
        p["metadata"]["name"] for p in pods if p["status"]["containerStatuses"][0]["restartCount"] > 0
    )
    described = call(mcp, "describe", resource="pod", name=crashing)
    assert "Back-off restarting failed container" in described
    assert "Namespace: default" in described
    events = call(mcp, "events", for_object=f"pod/{crashing}")
    assert "BackOff" in events
    logs = call(mcp, "logs", name="deployment/api-service", tail_lines=2)
    assert "NullPointerException" in logs
    previous = call(mcp, "logs", name=crashing, previous=True)
    assert "DB_URL missing" in previous
    for text in (described, events, json.dumps(listed)):
        no_sandbox_names(door, text)
    entries = by_agent(door.since(mark))
    got = find(entries, verb="get", resource="deployments", group="apps", name="api-service")
    assert got.path.startswith("/apis/apps/v1/namespaces/default/deployments/api-service")
    assert got.sandbox_namespace == door.sandbox("default")
    find(entries, verb="list", resource="pods", namespace="default", response_code=200)
    listed_events = [e for e in entries if e.resource == "events" and e.verb == "list"]
    assert any(f"involvedObject.name={crashing}" in (e.field_selector or "") for e in listed_events)
    find(entries, verb="get", resource="pods", subresource="log", response_code=200)


def test_writes_change_the_sandbox_and_are_recorded(door: Door, mcp: McpConnection, api: ApiClient) -> None:
    core: Any = CoreV1Api(api)
    apps: Any = AppsV1Api(api)
    ns = door.sandbox("default")
    mark = door.mark()
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "feature-flags"},
                               "data": {"checkout": "on"}})  # fmt: skip
    assert call(mcp, "apply", manifest=manifest) == "configmap/feature-flags created"
    assert call(mcp, "apply", manifest=manifest) == "configmap/feature-flags serverside-applied"
    call(mcp, "patch", resource="configmap/api-config", patch='{"data": {"LOG_LEVEL": "debug"}}',
         patch_type="merge")  # fmt: skip
    assert core.read_namespaced_config_map("api-config", ns).data["LOG_LEVEL"] == "debug"
    assert (
        call(mcp, "scale", resource="deployment/api-service", replicas=3)
        == "deployment.apps/api-service scaled"
    )
    assert apps.read_namespaced_deployment("api-service", ns).spec.replicas == 3
    assert call(mcp, "rollout_restart", resource="deployment", name="api-service").endswith("restarted")
    template = apps.read_namespaced_deployment("api-service", ns).spec.template
    assert "kubectl.kubernetes.io/restartedAt" in template.metadata.annotations
    # The controllers carry the restart out; the tool follows the Deployment until they are done.
    waited = call(mcp, "rollout_status", resource="deployment/api-service", timeout_seconds=90)
    assert waited.splitlines()[-1] == 'deployment "api-service" successfully rolled out'
    assert len(waited.splitlines()) > 1  # it waited, in kubectl's words
    # Undo goes back to the revision before the restart; revision 1 is the previous release.
    assert (
        call(mcp, "rollout_undo", resource="deployment/api-service")
        == "deployment.apps/api-service rolled back"
    )
    template = apps.read_namespaced_deployment("api-service", ns).spec.template
    assert "kubectl.kubernetes.io/restartedAt" not in (template.metadata.annotations or {})
    assert template.spec.containers[0].image == "registry.local/api:1.4.2"
    assert (
        call(mcp, "rollout_undo", resource="deployment/api-service", to_revision=1)
        == "deployment.apps/api-service rolled back"
    )
    image = apps.read_namespaced_deployment("api-service", ns).spec.template.spec.containers[0].image
    assert image == "registry.local/api:0.9.0"
    assert (
        call(mcp, "delete", resource="configmap", name="feature-flags") == 'configmap "feature-flags" deleted'
    )
    entries = by_agent(door.since(mark))
    find(entries, verb="patch", resource="configmaps", name="feature-flags", response_code=201,
         content_type="application/apply-patch+yaml")  # fmt: skip
    find(
        entries,
        verb="patch",
        resource="configmaps",
        name="api-config",
        content_type="application/merge-patch+json",
    )
    scaled = find(entries, verb="patch", resource="deployments", subresource="scale", name="api-service")
    assert scaled.request_body == {"spec": {"replicas": 3}}
    find(entries, verb="watch", resource="deployments", namespace="default")
    undo = [e for e in entries if e.content_type == "application/json-patch+json" and e.name == "api-service"]
    assert [e.response_code for e in undo] == [200, 200]
    find(entries, verb="delete", resource="configmaps", name="feature-flags", response_code=200)


def test_out_of_zone_write_is_refused_by_rbac_and_recorded(
    door: Door, mcp: McpConnection, api: ApiClient
) -> None:
    mark = door.mark()
    text = refused(mcp, "scale", resource="deployment/payments", namespace="prod", replicas=0)
    assert "Forbidden" in text
    assert 'cannot patch resource "deployments/scale"' in text
    no_sandbox_names(door, text)
    assert AppsV1Api(api).read_namespaced_deployment("payments", door.sandbox("prod")).spec.replicas == 2
    entry = find(by_agent(door.since(mark)), verb="patch", resource="deployments", subresource="scale")
    assert (entry.namespace, entry.response_code) == ("prod", 403)
    secrets = refused(mcp, "list", resource="secrets", namespace="kube-system")
    assert "Forbidden" in secrets


def test_observability_tools_answer_from_the_declared_state(door: Door, mcp: McpConnection) -> None:
    mark = door.mark()
    ratio = (
        'sum(rate(http_requests_total{service="api-service",code=~"5.."}[5m]))'
        ' / sum(rate(http_requests_total{service="api-service"}[5m]))'
    )
    result = json.loads(call(mcp, "prometheus_query", query=ratio))
    assert float(result["data"]["result"][0]["value"][1]) == pytest.approx(0.08)
    anchor = anchor_time(door.env).timestamp()
    ranged = json.loads(
        call(
            mcp, "prometheus_query_range", query=ratio, start=str(anchor - 3600), end=str(anchor), step="600"
        )
    )
    values = [round(float(v), 4) for _, v in ranged["data"]["result"][0]["values"]]
    assert (values[0], values[-1]) == (0.005, 0.08)
    bad = refused(mcp, "prometheus_query", query="sum(rate(http_requests_total{")
    assert "the server answered 400: unexpected end of input inside braces" in bad
    alerts = json.loads(call(mcp, "alerts"))
    assert [a["labels"]["alertname"] for a in alerts] == ["high-memory"]
    assert "api-gateway" in json.loads(call(mcp, "trace_services"))["data"]
    found = json.loads(call(mcp, "traces_search", service="api-gateway"))
    assert found["data"][0]["traceID"] == "abc123"
    assert json.loads(call(mcp, "trace_get", trace_id="abc123"))["total"] == 1
    boards = json.loads(call(mcp, "dashboards_search", query="system"))
    board = json.loads(call(mcp, "dashboard_get", uid=boards[0]["uid"]))
    assert board["dashboard"]["panels"][0]["title"] == "Error Rate"
    assert "not found" in refused(mcp, "trace_get", trace_id="ffff0000")
    resources = {e.resource for e in by_agent(door.since(mark))}
    assert {"metrics", "alerts", "traces", "dashboards"} <= resources


def test_tools_offered_follow_the_declared_interfaces(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    gw = GatewayThread(cluster.kubeconfig, tmp_path / "data")
    try:
        with built_environment(api) as env:
            kube_only = env.model_copy(update={"tools": ("container-orchestration",)})
            creds = gw.gateway.register(kube_only)
            with McpConnection(credentials_from(creds.kubeconfig_yaml, creds.endpoints["mcp"])) as mcp:
                assert set(mcp.tools()) == KUBERNETES_TOOLS
    finally:
        gw.stop()


@pytest.mark.parametrize("token", ["", "not-the-token"], ids=["no-token", "wrong-token"])
def test_mcp_without_the_environment_token_is_refused_and_recorded(door: Door, token: str) -> None:
    mark = door.mark()
    ca = credentials_from(door.creds.kubeconfig_yaml, door.creds.endpoints["mcp"]).ca_pem
    connection = McpConnection(McpCredentials(door.creds.endpoints["mcp"], token, ca))
    with pytest.raises(McpConnectError) as raised:
        connection.__enter__()
    assert "401 Unauthorized" in str(raised.value)
    assert "the MCP server refused the credentials" in str(raised.value)
    refusals = [e for e in door.since(mark) if e.path.startswith("/mcp")]
    assert refusals
    assert {e.response_code for e in refusals} == {401}
    assert {e.actor for e in refusals} == {"anonymous" if not token else "foreign"}
