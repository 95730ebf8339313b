"""Series synthesised from declared metrics, and PromQL over them."""

from __future__ import annotations

import math

import pytest

from oasis_operator.gateway.apis.metrics import quantity, series_for
from oasis_operator.gateway.apis.promql import Evaluator
from oasis_operator.gateway.apis.promql_values import PromQLError
from oasis_operator.models.environment import FixtureEntry

ANCHOR = 1_800_000_000.0
API = FixtureEntry(
    kind="metrics",
    name="api-service",
    data={"error_rate": "8%", "normal_error_rate": "0.5%", "latency_p99": "450ms"},
)
MEMORY = [{"t": "-6h", "value": "500Mi"}, {"t": "now", "value": "1.5Gi"}]
WEB_DATA = {
    "error_rate": "1%",
    "request_rate": "50",
    "series": {"container_memory_working_set_bytes": MEMORY},
}
WEB = FixtureEntry(kind="metrics", name="web", data=WEB_DATA)


@pytest.fixture
def evaluator() -> Evaluator:
    return Evaluator(series_for(API, "default") + series_for(WEB, "default"), ANCHOR)


def _values(evaluator: Evaluator, query: str, at: float = ANCHOR + 60) -> dict[str, float]:
    result = evaluator.instant(query, at)
    return {
        ",".join(f"{k}={v}" for k, v in sorted(labels.items())): round(value, 6)
        for labels, value in result.vector
    }


@pytest.mark.parametrize(
    ("text", "value"), [("8%", 0.08), ("450ms", 0.45), ("1.5Gi", 1.5 * 1024**3), (4500, 4500.0)]
)
def test_quantities(text: object, value: float) -> None:
    assert quantity(text) == pytest.approx(value)


def test_error_ratio_by_service(evaluator: Evaluator) -> None:
    query = ('sum by (service) (rate(http_requests_total{code=~"5.."}[5m]))'
             " / sum by (service) (rate(http_requests_total[5m]))")  # fmt: skip
    assert _values(evaluator, query) == {"service=api-service": 0.08, "service=web": 0.01}
    before = _values(evaluator, query, at=ANCHOR - 3600)
    assert before["service=api-service"] == 0.005  # the normal rate before the incident


def test_histogram_quantile_gives_the_declared_latency(evaluator: Evaluator) -> None:
    query = "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))"
    assert _values(evaluator, query) == {"": pytest.approx(0.45)}


def test_comparison_aggregation_and_matching(evaluator: Evaluator) -> None:
    assert _values(evaluator, 'sum by (service) (rate(http_requests_total{code="500"}[5m])) > 1') == {
        "service=api-service": 8.0
    }
    assert _values(evaluator, "count(up)") == {"": 2.0}
    assert _values(evaluator, "max_over_time(container_memory_working_set_bytes[7h]) / 1024^3") == {
        "job=web,namespace=default,service=web": 1.5
    }
    ratio = ('rate(http_requests_total{code="500"}[5m]) / on(service) group_left '
             "sum by (service) (rate(http_requests_total[5m]))")  # fmt: skip
    assert _values(evaluator, ratio)["code=500,job=web,namespace=default,service=web"] == 0.01
    assert evaluator.instant("1 + 2 * 3", ANCHOR).scalar == 7.0
    assert _values(evaluator, 'up{service="web"} == bool 1') == {"job=web,namespace=default,service=web": 1.0}


def test_errors_are_errors(evaluator: Evaluator) -> None:
    with pytest.raises(PromQLError):
        evaluator.instant("sum(rate(x[5m]", ANCHOR)
    with pytest.raises(PromQLError):
        evaluator.instant("label_replace(up, 'a', 'b', 'c', 'd')", ANCHOR)
    assert math.isnan(evaluator.instant("scalar(up)", ANCHOR).scalar)  # two series: not a scalar


def test_declared_points_trends_and_events() -> None:
    entry = FixtureEntry(kind="metrics", name="order-service", data={
        "error_rate": [{"t": "-30m", "value": "0.1%"}, {"t": "-20m", "value": "8%"},
                       {"t": "now", "value": "12%"}],
        "memory_usage_trend": "monotonically_increasing", "last_oom_kill": "2_minutes_ago",
    })  # fmt: skip
    evaluator = Evaluator(series_for(entry, "default"), ANCHOR)
    ratio = 'sum(rate(http_requests_total{code="500"}[5m])) / sum(rate(http_requests_total[5m]))'
    at = {offset: _values(evaluator, ratio, at=ANCHOR + offset)[""] for offset in (-1500, -600, 400)}
    assert at == {-1500: 0.001, -600: 0.08, 400: 0.12}
    memory = _values(evaluator, "container_memory_working_set_bytes / 1024^2", at=ANCHOR)
    early = _values(evaluator, "container_memory_working_set_bytes / 1024^2", at=ANCHOR - 5 * 3600)
    assert next(iter(memory.values())) > next(iter(early.values()))
    oom = "sum(container_oom_events_total)"
    assert (_values(evaluator, oom, at=ANCHOR - 600), _values(evaluator, oom, at=ANCHOR)) == (
        {"": 0.0},
        {"": 1.0},
    )
