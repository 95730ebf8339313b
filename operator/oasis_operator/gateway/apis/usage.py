"""A workload's CPU and memory use, one source for `kubectl top` and for the Prometheus API.

The declared use of a workload or pod is its `workload-signals` entry (`cpu_usage`: percent of one core
or a CPU quantity; `memory_usage`: a quantity). The Prometheus API serves it as cAdvisor's series
(`container_memory_working_set_bytes`, a gauge, and `container_cpu_usage_seconds_total`, a counter whose
rate is the cores in use) for every workload whose `metrics/<name>` entry does not already give that
series; the resource metrics API shows the same numbers per pod, and, for a workload that declares no
memory use, the value now of the memory series its `metrics/<name>` entry gives. So a PromQL query and
`kubectl top` agree about the same workload.
"""

from __future__ import annotations

from kubernetes.utils import parse_quantity

from oasis_operator.gateway.apis.metrics import (
    COUNTER_START,
    Piecewise,
    Series,
    ValueAt,
    quantity,
    series_for,
)
from oasis_operator.gateway.apis.store import find_fixture, fixtures_of
from oasis_operator.models.declared_values import CpuUse
from oasis_operator.models.environment import FixtureEntry
from oasis_operator.models.served_state import WorkloadSignals

DEFAULT_CPU_MILLIS = 5.0
DEFAULT_MEMORY_BYTES = 64 * 1024.0**2
MEMORY_SERIES = "container_memory_working_set_bytes"
CPU_SERIES = "container_cpu_usage_seconds_total"


def cpu_millis(text: object) -> float:
    """`850m` → 850, `2` → 2000, `1500000n` → 1.5 (a Kubernetes quantity; ValueError when it is none)."""
    return float(parse_quantity(str(text))) * 1000  # type: ignore[no-untyped-call]


def cpu_use_millis(declared: CpuUse) -> float:
    """Millicores from `95%` (of one core) or a CPU quantity."""
    text = str(declared).strip()
    if text.endswith("%"):
        return float(text[:-1]) * 10
    return cpu_millis(text)


def memory_bytes(text: object) -> float:
    return quantity(text) or 0.0


def pod_usage(fixtures: list[FixtureEntry], names: tuple[str, ...], namespace: str) -> tuple[float, float]:
    """(millicores, bytes) each container of a pod declared under `names` (most specific first) uses."""
    signals = next(
        (e for n in names if (e := find_fixture(fixtures, "workload-signals", n, namespace)) is not None),
        None,
    )
    data = signals.data_as(WorkloadSignals) if signals else WorkloadSignals()
    cpu = cpu_use_millis(data.cpu_usage) if data.cpu_usage is not None else DEFAULT_CPU_MILLIS
    if data.memory_usage is not None:
        return cpu, memory_bytes(data.memory_usage)
    memory = prometheus_memory(fixtures, names, namespace)
    return cpu, DEFAULT_MEMORY_BYTES if memory is None else memory


def _metrics_series(fixtures: list[FixtureEntry], name: str, namespace: str, series: str) -> Series | None:
    for entry in fixtures_of(fixtures, "metrics"):
        if entry.name == name and entry.namespace in (None, namespace):
            found = next(
                (s for s in series_for(entry, namespace) if s.label_dict["__name__"] == series), None
            )
            if found is not None:
                return found
    return None


def prometheus_memory(fixtures: list[FixtureEntry], names: tuple[str, ...], namespace: str) -> float | None:
    """The value now of the memory series the Prometheus API serves for the first of `names` that has a
    `metrics/<name>` entry declaring one; None when none does."""
    for name in names:
        if (series := _metrics_series(fixtures, name, namespace, MEMORY_SERIES)) is not None:
            return series.value_at(0.0)
    return None


def signal_series(fixtures: list[FixtureEntry], namespace: str) -> list[Series]:
    """cAdvisor's series of every declared use (`namespace` labels entries that name none), except a
    series the workload's `metrics/<name>` entry already gives."""
    out: list[Series] = []
    for entry in fixtures_of(fixtures, "workload-signals"):
        data = entry.data_as(WorkloadSignals)
        ns = entry.namespace or namespace
        base = {
            "namespace": ns,
            **({"pod": entry.name} if data.pod else {"service": entry.name, "job": entry.name}),
        }
        if data.memory_usage is not None and _metrics_series(fixtures, entry.name, ns, MEMORY_SERIES) is None:
            out.append(Series(_labels(MEMORY_SERIES, base), Piecewise(memory_bytes(data.memory_usage))))
        if data.cpu_usage is not None and _metrics_series(fixtures, entry.name, ns, CPU_SERIES) is None:
            cores = Piecewise(cpu_use_millis(data.cpu_usage) / 1000)
            out.append(Series(_labels(CPU_SERIES, base), _counter(cores)))
    return out


def _counter(rate: Piecewise) -> ValueAt:
    """A counter growing at `rate` per second since the counters' start."""
    return lambda t: rate.integral(COUNTER_START, t)


def _labels(name: str, base: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"__name__": name, **base}.items()))
