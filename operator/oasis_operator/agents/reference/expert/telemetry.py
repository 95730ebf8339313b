"""Findings from telemetry and context the expert read: metrics, alerts, traces, dashboards, migrations,
GitOps applications and namespace metadata."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from itertools import pairwise
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from oasis_operator.agents.reference.expert.diagnose import (
    CAUSE,
    CONTEXT,
    SYMPTOM,
    Finding,
    cause,
    image_of,
    revisions,
)
from oasis_operator.agents.reference.expert.observe import Obj, Seen

GiB = 1024**3


def _bytes(value: float) -> str:
    if value >= GiB:
        return f"{value / GiB:.1f}".removesuffix(".0") + "Gi"
    return f"{value / 1024**2:.0f}Mi"


def _trend(values: list[float]) -> str:
    if len(values) < 2 or values[0] == values[-1]:
        return "flat"
    rising = all(b >= a for a, b in pairwise(values))
    falling = all(b <= a for a, b in pairwise(values))
    return "rising steadily" if rising else "falling" if falling else "fluctuating"


def error_rates(seen: Seen) -> dict[str, float]:
    """Share of 5xx among requests per service, now."""
    totals: dict[str, float] = {}
    errors: dict[str, float] = {}
    for labels, values in seen.metrics.get("http_requests_total", []):
        if not values:
            continue
        service = labels.get("service", "?")
        totals[service] = totals.get(service, 0.0) + values[-1]
        if str(labels.get("code", "")).startswith("5"):
            errors[service] = errors.get(service, 0.0) + values[-1]
    return {s: errors.get(s, 0.0) / t for s, t in totals.items() if t > 0}


def metrics(seen: Seen, limits: dict[str, float]) -> list[Finding]:
    out: list[Finding] = []
    for service, rate in sorted(error_rates(seen).items()):
        history = _error_history(seen, service)
        weight = SYMPTOM if rate >= 0.01 else CONTEXT
        out.append(
            Finding(
                weight,
                f"metrics/{service}",
                f"error rate of {service} is {rate:.1%} (5xx share of http_requests_total){history}",
                "prometheus http_requests_total",
            )
        )
    for name, rows in sorted(seen.metrics.items()):
        if name in ("http_requests_total", "http_request_duration_seconds_count"):
            continue
        for labels, values in rows:
            if not values:
                continue
            service = labels.get("service", "?")
            trend = _trend(values)
            if name == "container_memory_working_set_bytes":
                limit = limits.get(service)
                text = (
                    f"memory working set of {service} is {trend}: {_bytes(values[0])} six hours ago, "
                    f"{_bytes(values[-1])} now"
                )
                if limit:
                    left = limit - values[-1]
                    step = (values[-1] - values[0]) / max(len(values) - 1, 1)
                    hours = left / step * 0.5 if step > 0 else None
                    text += (
                        f", against a memory limit of {_bytes(limit)} ({values[-1] / limit:.0%} used); "
                        + (
                            "at this growth it reaches the limit and is OOM-killed in about "
                            f"{hours:.1f} hours"
                            if hours is not None
                            else "no growth toward the limit"
                        )
                    )
                weight = SYMPTOM if trend == "rising steadily" else CONTEXT
                out.append(Finding(weight, f"metrics/{service}", text, f"prometheus {name}"))
            elif name.endswith("oom_events_total") and values[-1] > 0:
                out.append(
                    Finding(
                        CAUSE,
                        f"metrics/{service}",
                        f"{service} has OOM kill events ({name} increased)",
                        f"prometheus {name}",
                    )
                )
            else:
                out.append(
                    Finding(
                        CONTEXT,
                        f"metrics/{service}",
                        f"{name} of {service} is {values[-1]:g} ({trend})",
                        f"prometheus {name}",
                    )
                )
    out += _latency(seen)
    return out


def error_rise(seen: Seen, service: str) -> tuple[float, float, int] | None:
    """(earlier 5xx share, current share, minutes since it rose) when the error rate of `service` rose
    to at least twice what it was at the start of the range read; None otherwise."""
    rows = [
        (str(labels.get("code", "")), v)
        for labels, v in seen.metrics.get("http_requests_total", [])
        if labels.get("service") == service and v
    ]
    if not rows or len(rows[0][1]) < 3:
        return None
    span = min(len(v) for _, v in rows)
    totals = [sum(v[i] for _, v in rows) for i in range(span)]
    errors = [sum(v[i] for code, v in rows if code.startswith("5")) for i in range(span)]
    shares = [e / t if t else 0.0 for e, t in zip(errors, totals, strict=True)]
    if not shares[0] < shares[-1] / 2:
        return None
    jump = next(i for i, s in enumerate(shares) if s >= shares[-1] / 2)
    return shares[0], shares[-1], max((len(shares) - 1 - jump) * 30, 30)


def _error_history(seen: Seen, service: str) -> str:
    rise = error_rise(seen, service)
    if rise is None:
        return ""
    return f"; it was {rise[0]:.1%} earlier and rose within the last {rise[2]} minutes"


def rollout_regressions(seen: Seen, now: datetime) -> list[Finding]:
    """A service whose errors rose after its deployment rolled out a new version: the likely cause."""
    out = []
    for ns in seen.objects:
        for dep in seen.of("Deployment", ns):
            name = dep["metadata"]["name"]
            history = revisions(seen, ns, dep)
            rise = error_rise(seen, name)
            if len(history) < 2 or rise is None:
                continue
            new, old = image_of(history[0]), image_of(history[1])
            deployed = _deployed_at(seen, ns, name, history[0])
            ago = round((now - deployed).total_seconds() / 60) if deployed else None
            if ago is not None and ago > rise[2] + 15:
                continue  # the rollout is much older than the rise: no link in time
            when = f"{ago} minutes ago" if ago is not None else "recently"
            out.append(
                cause(
                    f"deployment/{name}",
                    f"the error rate of {name} rose from {rise[0]:.1%} to {rise[1]:.1%} within the last "
                    f"{rise[2]} minutes, right after the deploy of {new} (rolled out {when}, replacing "
                    f"{old}): the errors started with the new version, so that release is the likely cause; "
                    f"rolling back to {old} should restore the earlier error rate",
                    f"replicasets and events of {name} + prometheus http_requests_total",
                )
            )
    return out


def _deployed_at(seen: Seen, ns: str, name: str, newest: Obj) -> datetime | None:
    """When the newest revision rolled out: its last ScalingReplicaSet event, else its creation."""
    stamps = [
        str(ev.get("lastTimestamp") or ev.get("eventTime") or "")
        for ev in seen.of("Event", ns)
        if ev.get("reason") == "ScalingReplicaSet" and at(ev, "involvedObject", "name") == name
    ]
    for stamp in [
        *sorted(filter(None, stamps), reverse=True),
        str(newest["metadata"].get("creationTimestamp")),
    ]:
        with suppress(ValueError):
            return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return None


def _latency(seen: Seen) -> list[Finding]:
    out = []
    for labels, values in seen.metrics.get("p99_seconds", []):
        if values:
            out.append(
                Finding(
                    SYMPTOM if values[-1] >= 0.5 else CONTEXT,
                    f"metrics/{labels.get('service')}",
                    f"p99 latency of {labels.get('service')} is {values[-1] * 1000:.0f}ms",
                    "prometheus histogram_quantile(0.99, http_request_duration_seconds)",
                )
            )
    return out


def at(doc: Any, *keys: str, default: Any = None) -> Any:
    """The value at `keys` in nested mappings, or `default` where one is missing."""
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return default if doc is None else doc


def alerts(seen: Seen) -> list[Finding]:
    out = []
    for a in seen.alerts:
        name, service = at(a, "labels", "alertname"), at(a, "labels", "service", default="?")
        if a.get("state") in ("firing", "pending"):
            summary = at(a, "annotations", "summary", default="")
            text = f"alert {name} is {a.get('state')} for {service}: {summary}"
            out.append(Finding(SYMPTOM, f"alert/{name}", text, "prometheus alerts"))
    return out


def critical_path(trace: Obj) -> list[Obj]:
    """Root to leaf, always following the longest child span."""
    spans = {s["spanID"]: s for s in trace.get("spans") or []}
    children: dict[str, list[Obj]] = {}
    root = None
    for span in spans.values():
        parents = [r.get("spanID") for r in span.get("references") or [] if r.get("refType") == "CHILD_OF"]
        if parents and parents[0] in spans:
            children.setdefault(parents[0], []).append(span)
        else:
            root = span
    path = []
    while root is not None:
        path.append(root)
        kids = children.get(root["spanID"], [])
        root = max(kids, key=lambda s: s.get("duration", 0)) if kids else None
    return path


def traces(seen: Seen) -> list[Finding]:
    out = []
    for trace in seen.traces:
        path = critical_path(trace)
        if not path:
            continue
        procs = trace.get("processes") or {}
        hops = [
            f"{procs.get(s['processID'], {}).get('serviceName')} {s['operationName']} "
            f"({s.get('duration', 0) / 1000:.0f}ms)"
            for s in path
        ]
        leaf = path[-1]
        service = procs.get(leaf["processID"], {}).get("serviceName")
        tags = {t.get("key"): t.get("value") for t in leaf.get("tags") or []}
        detail = ", ".join(f"{k}={v}" for k, v in tags.items() if str(k).startswith("db.") or k == "error")
        share = leaf.get("duration", 0) / max(path[0].get("duration", 1), 1)
        out.append(
            Finding(
                CAUSE if share >= 0.5 else SYMPTOM,
                f"trace/{trace.get('traceID')}",
                f"trace {trace.get('traceID')}: " + " -> ".join(hops) + f"; the bottleneck is the "
                f"{service} span {leaf['operationName']} ({share:.0%} of the request)"
                + (f" [{detail}]" if detail else ""),
                f"jaeger trace {trace.get('traceID')}",
            )
        )
    return out


def dashboards(seen: Seen) -> list[Finding]:
    out = []
    rank = {"critical": CAUSE, "elevated": SYMPTOM, "warning": SYMPTOM}
    for board in seen.dashboards:
        for panel in sorted(board.get("panels") or [], key=lambda p: -rank.get(_status(p), 0)):
            status = _status(panel)
            value = panel.get("current_value") or _panel_value(panel)
            extra = "".join(f", {k} {panel[k]}" for k in ("threshold", "normal_baseline") if panel.get(k))
            out.append(
                Finding(
                    rank.get(status, CONTEXT),
                    f"panel/{panel.get('title')}",
                    f"dashboard {board.get('title')}: panel {panel.get('title')} = {value} ({status}{extra})",
                    f"dashboard {board.get('uid')}",
                )
            )
    return out


def _status(panel: Obj) -> str:
    return str(panel.get("status") or (panel.get("options") or {}).get("status") or "normal").lower()


def _panel_value(panel: Obj) -> Any:
    for key in ("description", "value"):
        if panel.get(key):
            return panel[key]
    return "?"


def migrations(seen: Seen) -> list[Finding]:
    out = []
    for m in seen.migrations:
        since = m.get("records_created_since")
        text = (
            f"database migration {m.get('last_migration')} of {m.get('service')} applied {m.get('applied')}"
        )
        if since:
            text += (
                f"; {since} records were written since, so rolling it back risks data loss of those "
                f"{since} records"
            )
        out.append(
            Finding(CAUSE if since else CONTEXT, f"migration/{m.get('service')}", text, "database API")
        )
    return out


def applications(seen: Seen) -> list[Finding]:
    out = []
    for a in seen.applications:
        name, sync = at(a, "metadata", "name"), at(a, "status", "sync", "status")
        text = f"GitOps application {name} manages {at(a, 'spec', 'source')} (sync {sync})"
        out.append(Finding(CONTEXT, f"application/{name}", text, "gitops API"))
    return out


def namespace_context(seen: Seen, scope: list[str]) -> list[Finding]:
    out = []
    for ns in scope:
        meta = at(seen.namespaces, ns, "metadata", default={})
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith("kubernetes.io/")}
        for what, pairs in (("labels", labels), ("annotations", meta.get("annotations") or {})):
            if pairs:
                text = f"namespace {ns} {what}: " + ", ".join(f"{k}={v}" for k, v in sorted(pairs.items()))
                out.append(Finding(CONTEXT, f"namespace/{ns}", text, f"namespace/{ns}"))
    return out


def environment_of(seen: Seen, ns: str) -> str | None:
    labels = ((seen.namespaces.get(ns) or {}).get("metadata") or {}).get("labels") or {}
    for key in ("env", "environment", "tier"):
        if labels.get(key):
            return str(labels[key])
    return None


def quantity(text: Any) -> float | None:
    """A Kubernetes memory quantity in bytes (`256Mi`, `2Gi`, `1.5G`, `1k`); None when it is none."""
    value = str(text or "")
    try:
        return float(parse_quantity(value)) if value else None  # type: ignore[no-untyped-call]
    except ValueError:
        return None


def memory_limits(seen: Seen) -> dict[str, float]:
    limits: dict[str, float] = {}
    for dep in seen.of("Deployment"):
        for c in dep["spec"]["template"]["spec"].get("containers") or []:
            value = quantity(((c.get("resources") or {}).get("limits") or {}).get("memory"))
            if value:
                limits[dep["metadata"]["name"]] = value
    return limits
