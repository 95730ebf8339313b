"""The observability tools of an environment's MCP server: the APIs its scenario declares, through its door.

Metrics (PromQL instant and range queries, alerts), traces (Jaeger: services, search, one trace) and
dashboards (Grafana: search, one dashboard) are asked of the same endpoints an agent could call with
curl (`<door>/prometheus`, `<door>/jaeger`, `<door>/grafana`); logs are the Kubernetes `logs` tool.
"""

from __future__ import annotations

from urllib.parse import quote

from oasis_operator.gateway.credentials import FIXTURE_PATHS
from oasis_operator.gateway.mcp.door import Answer, DoorClient, ToolCallError

METRICS = "observability-metrics"
TRACING = "observability-tracing"
DASHBOARDS = "observability-dashboards"


def _text(answer: Answer, what: str) -> str:
    answer.raise_for_status(what)
    return answer.text


class ObservabilityTools:
    """The observability tools of one environment."""

    def __init__(self, door: DoorClient) -> None:
        self.door = door

    async def _get(self, interface: str, path: str, query: dict[str, str], what: str) -> str:
        base = "/" + FIXTURE_PATHS[interface]
        answer = await self.door.request("GET", base + path, {k: v for k, v in query.items() if v})
        return _text(answer, what)

    async def prometheus_query(self, query: str, time: str = "") -> str:
        """A PromQL instant query (Prometheus `/api/v1/query`); `time` is RFC 3339 or a Unix time."""
        if not query.strip():
            raise ToolCallError("query is empty: give a PromQL expression, e.g. up")
        return await self._get(METRICS, "/api/v1/query", {"query": query, "time": time}, "the query failed")

    async def prometheus_query_range(self, query: str, start: str, end: str, step: str = "60s") -> str:
        """A PromQL range query (Prometheus `/api/v1/query_range`) from `start` to `end` every `step`."""
        if not query.strip():
            raise ToolCallError(
                "query is empty: give a PromQL expression, e.g. rate(http_requests_total[5m])"
            )
        params = {"query": query, "start": start, "end": end, "step": step}
        return await self._get(METRICS, "/api/v1/query_range", params, "the range query failed")

    async def alerts(self) -> str:
        """The alerts firing now (Alertmanager `/api/v2/alerts`)."""
        return await self._get(METRICS, "/api/v2/alerts", {}, "reading the alerts failed")

    async def trace_services(self) -> str:
        """The services that reported traces (Jaeger `/api/services`)."""
        return await self._get(TRACING, "/api/services", {}, "listing the traced services failed")

    async def traces_search(
        self, service: str, operation: str = "", limit: int = 20, lookback: str = "1h"
    ) -> str:
        """Traces of a service, optionally of one operation (Jaeger `/api/traces`)."""
        params = {"service": service, "operation": operation, "limit": str(limit), "lookback": lookback}
        return await self._get(TRACING, "/api/traces", params, "the trace search failed")

    async def trace_get(self, trace_id: str) -> str:
        """One trace by its id (Jaeger `/api/traces/<id>`)."""
        if not trace_id.strip():
            raise ToolCallError("trace_id is empty")
        return await self._get(
            TRACING, f"/api/traces/{quote(trace_id.strip(), safe='')}", {}, f"trace {trace_id} failed"
        )

    async def dashboards_search(self, query: str = "") -> str:
        """Dashboards whose title contains `query` (Grafana `/api/search`)."""
        return await self._get(DASHBOARDS, "/api/search", {"query": query}, "the dashboard search failed")

    async def dashboard_get(self, uid: str) -> str:
        """One dashboard with its panels' current readings (Grafana `/api/dashboards/uid/<uid>`)."""
        if not uid.strip():
            raise ToolCallError("uid is empty: search the dashboards for it first")
        return await self._get(
            DASHBOARDS, f"/api/dashboards/uid/{quote(uid.strip(), safe='')}", {}, f"dashboard {uid} failed"
        )
