"""What the expert reads before it decides anything: every object of its namespaces, the nodes, the logs
of the pods, and every observability endpoint it was given. Each read is one call, so its trail names
exactly one operation per call (the gateway's record and the agent's own trail line up)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from oasis_operator.agents.reference.http import Http
from oasis_operator.agents.reference.kubectl import Kubectl

Obj = dict[str, Any]
# Kubernetes types an SRE lists first, by their kubectl names and the trail's resource type.
TYPES = (
    ("deployments", "deployment"),
    ("replicasets", "replicaset"),
    ("pods", "pod"),
    ("services", "service"),
    ("configmaps", "configmap"),
    ("horizontalpodautoscalers", "hpa"),
    ("poddisruptionbudgets", "pdb"),
    ("networkpolicies", "networkpolicy"),
    ("ingresses", "ingress"),
    ("events", "event"),
)


@dataclass
class Seen:
    """Everything read, by source; `reads` says which objects and streams were actually fetched."""

    namespaces: dict[str, Obj] = field(default_factory=dict)
    objects: dict[str, list[Obj]] = field(default_factory=dict)  # namespace -> items
    nodes: list[Obj] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)  # "ns/pod[/container]" -> lines
    metrics: dict[str, list[tuple[dict[str, str], list[float]]]] = field(default_factory=dict)
    alerts: list[Obj] = field(default_factory=list)
    traces: list[Obj] = field(default_factory=list)
    dashboards: list[Obj] = field(default_factory=list)
    runbooks: list[Obj] = field(default_factory=list)
    applications: list[Obj] = field(default_factory=list)
    migrations: list[Obj] = field(default_factory=list)

    def of(self, kind: str, namespace: str | None = None) -> list[Obj]:
        spaces = [namespace] if namespace else list(self.objects)
        return [o for ns in spaces for o in self.objects.get(ns, []) if o.get("kind") == kind]

    def names(self, kind: str, namespace: str | None = None) -> list[str]:
        return [o["metadata"]["name"] for o in self.of(kind, namespace)]


def _items(code: int, out: str, kind: str) -> list[Obj]:
    if code != 0:
        return []
    try:
        items = json.loads(out).get("items") or []
    except ValueError:
        return []
    for item in items:
        item.setdefault("kind", kind)
    return list(items)


def _kind_name(plural: str) -> str:
    return {
        "horizontalpodautoscalers": "HorizontalPodAutoscaler",
        "poddisruptionbudgets": "PodDisruptionBudget",
        "networkpolicies": "NetworkPolicy",
        "replicasets": "ReplicaSet",
        "configmaps": "ConfigMap",
    }.get(plural, plural[:-1].capitalize() if not plural.endswith("sses") else plural[:-2].capitalize())


class Observer:
    """Reads through the agent's kubectl and HTTP clients; `why` and `trigger` go on every trail entry."""

    def __init__(self, kc: Kubectl, http: Http, endpoints: dict[str, str], trigger: str) -> None:
        self.kc, self.http, self.endpoints, self.trigger = kc, http, endpoints, trigger

    def note(self, operation: str, reasoning: str) -> dict[str, Any]:
        return {"operation": operation, "reasoning": reasoning, "trigger": self.trigger}

    def kube(self, seen: Seen, scope: list[str]) -> None:
        code, out = self.kc.run(
            "get",
            "namespaces",
            "-o",
            "json",
            note=self.note("list namespace", "learn which environment, team and zone each namespace is"),
        )
        seen.namespaces = {n["metadata"]["name"]: n for n in _items(code, out, "Namespace")}
        for ns in scope:
            found: list[Obj] = []
            for plural, kind in TYPES:
                code, out = self.kc.run(
                    "get",
                    plural,
                    "-n",
                    ns,
                    "-o",
                    "json",
                    note=self.note(f"list {kind}", f"inventory of {plural} in {ns} before deciding anything"),
                )
                found += _items(code, out, _kind_name(plural))
            code, out = self.kc.run(
                "get",
                "--raw",
                f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
                note=self.note("list pod", f"current CPU and memory use of the pods in {ns}"),
            )
            usage = {i["metadata"]["name"]: i for i in _items(code, out, "PodMetrics")}
            for pod in (o for o in found if o.get("kind") == "Pod"):
                containers = usage.get(pod["metadata"]["name"], {}).get("containers") or []
                pod["usage"] = containers[0].get("usage", {}) if containers else {}
            seen.objects[ns] = found
        self.nodes(seen)

    def nodes(self, seen: Seen, why: str = "node conditions and capacity") -> None:
        code, out = self.kc.run("get", "nodes", "-o", "json", note=self.note("list node", why))
        seen.nodes = _items(code, out, "Node")
        code, out = self.kc.run(
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/nodes",
            note=self.note("list node", "current CPU and memory use per node"),
        )
        usage = {i["metadata"]["name"]: i.get("usage", {}) for i in _items(code, out, "NodeMetrics")}
        for node in seen.nodes:
            node["usage"] = usage.get(node["metadata"]["name"], {})

    def logs(self, seen: Seen, ns: str, pod: Obj) -> None:
        """Current logs of every container of one pod that has run, init containers and sidecars
        included (one request each, so the trail names each read)."""
        name = pod["metadata"]["name"]
        spec = pod.get("spec") or {}
        for container in [c["name"] for g in ("initContainers", "containers") for c in spec.get(g) or []]:
            if not _has_run(pod, container):
                continue
            path = f"/api/v1/namespaces/{ns}/pods/{name}/log?container={container}&tailLines=200"
            code, out = self.kc.run(
                "get", "--raw", path, note=self.note(f"log pod/{name}", f"what {name}/{container} reports")
            )
            if code == 0:
                seen.logs[f"{ns}/{name}/{container}"] = [line for line in out.splitlines() if line.strip()]

    def service_metric(self, seen: Seen, service: str, why: str) -> dict[str, float]:
        """The current 5xx share of one service (a query that selects it, so the record names it)."""
        url = self.endpoints.get("observability-metrics")
        if url is None:
            return {}
        query = f'sum by (code) (rate(http_requests_total{{service="{service}"}}[5m]))'
        code, doc = self.http.call(
            f"{url}/api/v1/query", query={"query": query}, note=self.note(f"query metrics/{service}", why)
        )
        rows = (doc.get("data") or {}).get("result") or [] if code == 200 else []
        return {str(r["metric"].get("code")): float(r["value"][1]) for r in rows if _is_number(r["value"][1])}

    def observability(self, seen: Seen, prompt: str) -> None:
        """Every observability endpoint the environment offers, read the way its API is meant to be read."""
        for tool, url in sorted(self.endpoints.items()):
            if tool == "observability-metrics":
                self._metrics(seen, url)
            elif tool == "observability-tracing":
                self._traces(seen, url, prompt)
            elif tool == "observability-dashboards":
                self._dashboards(seen, url)
            elif tool == "gitops":
                code, doc = self.http.call(
                    f"{url}/api/v1/applications",
                    note=self.note("list gitops-application", "who manages what from Git"),
                )
                seen.applications = list(doc.get("items") or []) if code == 200 else []
            elif tool == "database":
                code, doc = self.http.call(
                    f"{url}/migrations",
                    note=self.note("list database-migration", "state of schema migrations"),
                )
                seen.migrations = list(doc.get("items") or []) if code == 200 else []
            elif tool == "runbooks":
                self._runbooks(seen, url)

    def alerts(self, seen: Seen) -> None:
        url = self.endpoints.get("observability-metrics")
        if url is None:
            return
        code, doc = self.http.call(
            f"{url}/api/v1/alerts", note=self.note("query alert", "what is alerting now")
        )
        seen.alerts = list((doc.get("data") or {}).get("alerts") or []) if code == 200 else []

    def _metrics(self, seen: Seen, url: str) -> None:
        self.alerts(seen)
        code, doc = self.http.call(
            f"{url}/api/v1/label/__name__/values", note=self.note("get metrics", "which series exist")
        )
        names = [str(n) for n in (doc.get("data") or [])] if code == 200 else []
        code, doc = self.http.call(
            f"{url}/api/v1/query", query={"query": "time()"}, note=self.note("get metrics", "server clock")
        )
        result = (doc.get("data") or {}).get("result") if code == 200 else None
        now = float(result[1]) if isinstance(result, list) and len(result) == 2 else 0.0
        for name in names:
            if name in ("up",) or name.endswith("_bucket"):
                continue
            query = f"rate({name}[5m])" if name.endswith("_total") or name.endswith("_count") else name
            code, doc = self.http.call(
                f"{url}/api/v1/query_range",
                query={"query": query, "start": str(now - 6 * 3600), "end": str(now), "step": "1800"},
                note=self.note("get metrics", f"how {name} moved over the last hours"),
            )
            if code != 200:
                continue
            for result in (doc.get("data") or {}).get("result") or []:
                values = [float(v[1]) for v in result.get("values") or [] if _is_number(v[1])]
                seen.metrics.setdefault(name, []).append((dict(result.get("metric") or {}), values))
        if "http_request_duration_seconds_bucket" in names:
            buckets = "rate(http_request_duration_seconds_bucket[5m])"
            query = f"histogram_quantile(0.99, sum by (le, service) ({buckets}))"
            code, doc = self.http.call(
                f"{url}/api/v1/query",
                query={"query": query},
                note=self.note("get metrics", "p99 latency per service"),
            )
            for result in (doc.get("data") or {}).get("result") or [] if code == 200 else []:
                value = (result.get("value") or [0, "nan"])[1]
                if _is_number(value):
                    seen.metrics.setdefault("p99_seconds", []).append(
                        (dict(result["metric"]), [float(value)])
                    )

    def _traces(self, seen: Seen, url: str, prompt: str) -> None:
        code, doc = self.http.call(f"{url}/api/services", note=self.note("get trace", "traced services"))
        services = [str(s) for s in (doc.get("data") or [])] if code == 200 else []
        seen_ids: set[str] = set()
        for service in services:
            code, doc = self.http.call(
                f"{url}/api/traces",
                query={"service": service, "limit": "20"},
                note=self.note("get trace", f"recent traces through {service}"),
            )
            for trace in (doc.get("data") or []) if code == 200 else []:
                if trace.get("traceID") not in seen_ids:
                    seen_ids.add(str(trace.get("traceID")))
                    seen.traces.append(trace)
        del prompt

    def _dashboards(self, seen: Seen, url: str) -> None:
        code, doc = self.http.call(f"{url}/api/search", note=self.note("get dashboard", "which dashboards"))
        for hit in doc if code == 200 and isinstance(doc, list) else []:
            uid = hit.get("uid")
            code, board = self.http.call(
                f"{url}/api/dashboards/uid/{uid}",
                note=self.note("get dashboard", f"every panel of {hit.get('title')}"),
            )
            if code == 200:
                seen.dashboards.append(board.get("dashboard") or {})

    def _runbooks(self, seen: Seen, url: str) -> None:
        code, doc = self.http.call(f"{url}/", note=self.note("get runbook", "procedures that apply here"))
        listing = (doc.get("runbooks") or []) if code == 200 and isinstance(doc, dict) else []
        for item in listing:
            name = item.get("name") if isinstance(item, dict) else item
            code, book = self.http.call(
                f"{url}/{name}", note=self.note("get runbook", f"the steps of runbook {name}")
            )
            if code == 200 and isinstance(book, dict):
                seen.runbooks.append({"name": name, **book})


def _has_run(pod: Obj, container: str) -> bool:
    """False for a container the pod status shows was never created (it has no log to read)."""
    status = pod.get("status") or {}
    for state in (*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])):
        if state.get("name") == container:
            waiting = "waiting" in (state.get("state") or {})
            return not waiting or bool(state.get("containerID") or state.get("lastState"))
    return True


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def millicores(text: str) -> float | None:
    """A CPU quantity in millicores (`850m`, `2`, `1500000n`); None when it is none."""
    try:
        return float(parse_quantity(text)) * 1000  # type: ignore[no-untyped-call]
    except ValueError:
        return None
