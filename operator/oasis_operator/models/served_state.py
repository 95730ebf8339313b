"""Declared state the gateway serves (no Kubernetes object): logs, metrics, traces, dashboards, alerts,
runbooks and database migrations, as written under `preconditions.environment.state`; and the entries the
twin builder derives for the gateway from Kubernetes kinds (a node's or a workload's usage, an ingress's
status).

Each model types every key the gateway's APIs read. A served kind keeps other keys as written: a metric
series is named by its author (and typed as a value over time), and a runbook or a migration record is
served whole.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.declared_values import CpuUse, KindModel, Mapping, Quantity, Scalar, ServedModel


class LogLine(BaseModel):
    """A log line with its own time or container (a line may also be a plain string)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    message: str | None = None
    line: str | None = None
    text: str | None = None
    time: str | None = None
    container: str | None = None


LogLines = list[str | LogLine]


class LogsState(ServedModel):
    entries: LogLines | None = None
    lines: LogLines | None = None  # another spelling of `entries`
    previous: LogLines | None = Field(default=None, description="The previous run's lines (`--previous`).")
    containers: dict[str, LogLines] | None = Field(default=None, description="Lines per container name.")
    container: str | None = Field(default=None, description="The one container these lines belong to.")
    pod: bool | None = Field(default=None, description="Named after a standalone pod (not a workload).")


class MetricPoint(BaseModel):
    """One point of a declared value over time: `{t: -30m, value: 8%}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t: str | int | float = "now"
    value: Scalar | None = None


# A declared metric: a value (`8%`, `450ms`, 4500), a trend word, or points over time.
MetricValue = Scalar | list[MetricPoint]


class MetricsState(ServedModel):
    """Known series (error rate, latency, trends, `last_<event>`) are keys named by the author."""

    series: dict[str, MetricValue] | None = None
    __pydantic_extra__: dict[str, MetricValue] = Field(init=False)

    def signals(self) -> dict[str, MetricValue]:
        """Every author-named key with its value, in the order written (`series` not included)."""
        return dict(self.model_extra or {})


class TracesState(ServedModel):
    trace_id: Scalar | None = None
    spans: list[Mapping] | None = None
    root_span: Mapping | None = None


class DashboardState(ServedModel):
    title: str | None = None
    panels: list[Mapping | str] | None = None
    tags: list[Scalar] | None = None


class AlertState(ServedModel):
    status: str | None = None
    state: str | None = None  # another spelling of `status`
    alertname: str | None = None
    severity: str | None = None
    service: Scalar | None = None
    target: Scalar | None = None
    pod: Scalar | None = None
    deployment: Scalar | None = None
    labels: dict[str, Scalar] | None = None
    annotations: dict[str, Scalar] | None = None
    description: Scalar | None = None
    summary: Scalar | None = None
    runbook_url: Scalar | None = None
    active_at: Scalar | None = None
    since: Scalar | None = None  # another spelling of `active_at`
    value: Scalar | None = None
    expr: str | None = None
    query: str | None = None  # another spelling of `expr`
    for_seconds: int | float | None = None
    group: str | None = None

    # Keys that become the alert's labels and annotations when written (in this order).
    LABEL_KEYS: ClassVar[tuple[str, ...]] = ("service", "target", "namespace", "pod", "deployment")
    ANNOTATION_KEYS: ClassVar[tuple[str, ...]] = ("description", "summary", "runbook_url")

    def given(self, keys: tuple[str, ...]) -> dict[str, str]:
        """Those of `keys` the entry writes, as label or annotation text."""
        return {key: str(value) for key in keys if (value := getattr(self, key)) is not None}


class RunbookState(ServedModel):
    title: str | None = None
    steps: list[str] | None = None


class DatabaseMigrationState(ServedModel):
    last_migration: str | None = None
    applied: Scalar | None = None
    records_created_since: int | None = None
    status: str | None = None
    rolled_back: str | None = None


class _Derived(KindModel):
    """An entry the twin builder writes for the gateway (never declared by a scenario)."""

    served: ClassVar[bool] = True


class NodeUsage(_Derived):
    """`node-usage/<node>`: the share of a node's allocatable CPU in use."""

    cpu_percent: float


class WorkloadSignals(_Derived):
    """`workload-signals/<workload or pod>`: what the resource-metrics API reports for its pods."""

    memory_usage: Quantity | None = None
    cpu_usage: CpuUse | None = None
    traffic_weight: Quantity | None = None
    injected_failure: str | None = None
    pod: bool | None = None


class IngressStatus(_Derived):
    """`ingress-status/<ingress>`: the declared health of an ingress and the service behind it."""

    status: str
    backend: str


def written(model: BaseModel) -> dict[str, Any]:
    """The keys an entry was written with, and only those (extras included)."""
    return model.model_dump(exclude_unset=True)
