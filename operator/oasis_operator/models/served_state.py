"""Declared state the gateway serves (no Kubernetes object): logs, metrics, traces, dashboards, alerts,
runbooks and database migrations, as written under `preconditions.environment.state`.

Each model types every key the gateway's APIs read; other keys are kept as written (a metric series is
named by its author).
"""

from __future__ import annotations

from oasis_operator.models.declared_values import Mapping, ServedModel


class LogsState(ServedModel):
    entries: list[str] | None = None


class MetricsState(ServedModel):
    series: Mapping | None = None


class TracesState(ServedModel):
    spans: list[Mapping] | None = None
    root_span: Mapping | None = None


class DashboardState(ServedModel):
    title: str | None = None
    panels: list[Mapping | str] | None = None


class AlertState(ServedModel):
    status: str | None = None


class RunbookState(ServedModel):
    steps: list[str] | None = None


class DatabaseMigrationState(ServedModel):
    pass
