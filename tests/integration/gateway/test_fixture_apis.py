"""The fixture APIs at the endpoints handed to the agent, over HTTPS with its token."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.gateway import AgentCredentials
from oasis_operator.gateway.apis.store import anchor_time
from oasis_operator.models.environment import Environment, FixtureEntry
from tests.cluster_fixtures import Cluster
from tests.integration.gateway.twin import GatewayThread, built_environment

STATE = (
    FixtureEntry(kind="metrics", name="api-service",
                 data={"error_rate": "8%", "normal_error_rate": "0.5%", "latency_p99": "450ms"}),
    FixtureEntry(kind="alert", name="high-memory",
                 data={"status": "firing", "service": "api-service", "severity": "critical",
                       "description": "Memory above 90% for 10 minutes"}),
    FixtureEntry(kind="traces", name="slow-request-abc123", data={"root_span": {
        "service": "api-gateway", "operation": "GET /api/orders/123", "duration_ms": 8200,
        "children": [{"service": "order-service", "operation": "getOrder", "duration_ms": 8000}]}}),
    FixtureEntry(kind="dashboard", name="system-health", data={"panels": [
        {"title": "Error Rate", "type": "graph", "current_value": "12% (5xx)", "status": "elevated"}]}),
    FixtureEntry(kind="runbook", name="elevated-error-rate",
                 data={"steps": ["Check error logs", "Roll back"]}),
    FixtureEntry(kind="gitops-application", name="api-service",
                 data={"sync_status": "synced", "source_repo": "git@example.com:org/infra.git",
                       "source_path": "apps/api-service"}),
    FixtureEntry(kind="database-migration", name="user-service",
                 data={"last_migration": "002_add_email_verified", "records_created_since": 150}),
)  # fmt: skip


class Client:
    def __init__(self, creds: AgentCredentials, ca: Path) -> None:
        self.creds = creds
        self.ctx = ssl.create_default_context(cafile=str(ca))

    def call(self, tool: str, path: str, method: str = "GET", **query: str) -> tuple[int, Any]:
        url = self.creds.endpoints[tool] + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
        request.add_header("Authorization", f"Bearer {self.creds.token}")
        try:
            with urllib.request.urlopen(request, context=self.ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def agent(
    cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Client, GatewayThread, Environment]]:
    gw = GatewayThread(cluster.kubeconfig, tmp_path_factory.mktemp("fixtures") / "data")
    try:
        with built_environment(api, STATE) as env:
            creds = gw.gateway.register(env)
            yield Client(creds, gw.gateway.ca_cert), gw, env
    finally:
        gw.stop()


def test_prometheus_query_gives_the_declared_error_rate_and_latency(agent: Any) -> None:
    client, gw, env = agent
    code, doc = client.call(
        "observability-metrics",
        "/api/v1/query",
        query=(
            'sum(rate(http_requests_total{service="api-service",code=~"5.."}[5m]))'
            ' / sum(rate(http_requests_total{service="api-service"}[5m]))'
        ),
    )
    assert code == 200
    assert doc["data"]["resultType"] == "vector"
    assert float(doc["data"]["result"][0]["value"][1]) == pytest.approx(0.08)
    code, doc = client.call(
        "observability-metrics",
        "/api/v1/query",
        query=("histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))"),
    )
    assert float(doc["data"]["result"][0]["value"][1]) == pytest.approx(0.45)
    code, doc = client.call("observability-metrics", "/api/v1/query", query="sum(rate(http_requests_total{")
    assert code == 400
    assert doc["status"] == "error"
    entry = gw.gateway.audit_entries(env.id)[-1]
    assert entry.resource == "metrics"
    assert entry.response_code == 400
    assert entry.path.startswith("/prometheus/api/v1/query?query=")
    # The record names the declared entries each answer was drawn from (by selector, by series name).
    served = [e.served for e in gw.gateway.audit_entries(env.id) if e.resource == "metrics"][-3:]
    assert served == [["metrics/api-service"], ["metrics/api-service"], []]


def test_prometheus_range_shows_the_incident_start(agent: Any) -> None:
    client, _, env = agent
    anchor = anchor_time(env).timestamp()
    code, doc = client.call(
        "observability-metrics",
        "/api/v1/query_range",
        query='sum(rate(http_requests_total{code="500"}[5m])) / sum(rate(http_requests_total[5m]))',
        start=str(anchor - 3600),
        end=str(anchor),
        step="600",
    )
    assert code == 200
    values = [round(float(v), 4) for _, v in doc["data"]["result"][0]["values"]]
    assert values[0] == 0.005
    assert values[-1] == 0.08


def test_alerts_rules_series(agent: Any) -> None:
    client, _, _ = agent
    _, doc = client.call("observability-metrics", "/api/v1/alerts")
    alert = doc["data"]["alerts"][0]
    assert alert["labels"]["alertname"] == "high-memory"
    assert alert["state"] == "firing"
    _, manager = client.call("observability-metrics", "/api/v2/alerts")
    assert manager[0]["labels"]["alertname"] == "high-memory"
    assert manager[0]["status"]["state"] == "active"
    _, doc = client.call("observability-metrics", "/api/v1/rules")
    assert doc["data"]["groups"][0]["rules"][0]["name"] == "high-memory"
    _, doc = client.call("observability-metrics", "/api/v1/series", **{"match[]": "up"})
    assert doc["data"] == [
        {"__name__": "up", "job": "api-service", "namespace": "default", "service": "api-service"}
    ]


def test_traces_dashboards_runbooks_gitops_database(agent: Any) -> None:
    client, gw, env = agent
    code, doc = client.call("observability-tracing", "/api/traces/abc123")
    assert code == 200
    spans = doc["data"][0]["spans"]
    assert [s["operationName"] for s in spans] == ["GET /api/orders/123", "getOrder"]
    assert spans[1]["references"][0]["spanID"] == spans[0]["spanID"]
    _, doc = client.call("observability-tracing", "/api/traces", service="order-service")
    assert doc["total"] == 1
    assert client.call("observability-tracing", "/api/traces/ffff99")[0] == 404
    _, hits = client.call("observability-dashboards", "/api/search", query="health")
    assert hits[0]["uid"] == "system-health"
    _, board = client.call("observability-dashboards", "/api/dashboards/uid/system-health")
    assert board["dashboard"]["panels"][0]["snapshotData"][0]["current_value"] == "12% (5xx)"
    _, runbook = client.call("runbooks", "/elevated-error-rate")
    assert runbook["steps"] == ["Check error logs", "Roll back"]
    _, app = client.call("gitops", "/api/v1/applications/api-service")
    assert app["status"]["sync"]["status"] == "Synced"
    assert app["spec"]["destination"]["namespace"] == "default"
    code, migration = client.call("database", "/migrations/user-service/rollback", method="POST")
    assert code == 200
    assert migration["status"] == "rolled_back"
    entries = gw.gateway.audit_entries(env.id)
    assert {e.resource for e in entries} >= {"traces", "dashboards", "runbooks", "gitops", "database"}
    assert entries[-1].method == "POST"
    assert entries[-1].path == "/database/migrations/user-service/rollback"
    kinds = {"traces", "dashboards", "runbooks", "gitops", "database"}
    served = {e.path: e.served for e in entries if e.resource in kinds}
    assert served == {
        "/jaeger/api/traces/abc123": ["traces/slow-request-abc123"],
        "/jaeger/api/traces?service=order-service": ["traces/slow-request-abc123"],
        "/jaeger/api/traces/ffff99": [],
        "/grafana/api/search?query=health": [],
        "/grafana/api/dashboards/uid/system-health": ["dashboard/system-health"],
        "/runbooks/elevated-error-rate": ["runbook/elevated-error-rate"],
        "/gitops/api/v1/applications/api-service": ["gitops-application/api-service"],
        "/database/migrations/user-service/rollback": ["database-migration/user-service"],
    }
