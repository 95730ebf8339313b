"""What the gateway answers about a pod from declared state: its workload (by ownerReferences), the
default log of a container nothing declares a log for, the usage `kubectl top` shows, and which
declared log a container reads."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from oasis_operator.gateway.apis.default_logs import default_log
from oasis_operator.gateway.apis.logs import container_log
from oasis_operator.gateway.apis.promql import Evaluator
from oasis_operator.gateway.apis.usage import pod_usage, prometheus_memory, signal_series
from oasis_operator.gateway.apis.workloads import Workload, workload_of
from oasis_operator.models.environment import FixtureEntry

ANCHOR = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NS = "ev-abc123-default"


def _owned(kind: str, name: str, owner: tuple[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    refs = [{"kind": owner[0], "name": owner[1], "controller": True}] if owner else []
    return {"kind": kind, "metadata": {"name": name, "namespace": NS, "ownerReferences": refs, **meta}}


def _resolve(pod: dict[str, Any], objects: list[dict[str, Any]]) -> tuple[Workload, list[str]]:
    paths = {
        "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
        "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
        "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
        "Job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
        "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs/{name}",
    }
    by_path = {
        paths[o["kind"]].format(ns=NS, name=o["metadata"]["name"]): o for o in objects if o["kind"] in paths
    }
    asked: list[str] = []

    async def fetch(path: str) -> tuple[int, Any]:
        asked.append(path)
        return (200, by_path[path]) if path in by_path else (404, None)

    return asyncio.run(workload_of(fetch, pod)), asked


def test_a_deployment_pod_is_resolved_through_its_replicaset_whatever_its_name() -> None:
    pod = _owned("Pod", "x7qk2", ("ReplicaSet", "rs-abc"), labels={"app": "checkout"})
    rs = _owned("ReplicaSet", "rs-abc", ("Deployment", "api-service"))
    workload, asked = _resolve(pod, [rs, _owned("Deployment", "api-service")])
    assert workload == Workload("Deployment", "api-service", ("x7qk2", "rs-abc", "api-service", "checkout"))
    assert asked == [
        f"/apis/apps/v1/namespaces/{NS}/replicasets/rs-abc",
        f"/apis/apps/v1/namespaces/{NS}/deployments/api-service",
    ]
    assert not workload.is_batch


def test_a_cronjob_pod_is_resolved_through_its_job_and_is_batch() -> None:
    pod = _owned("Pod", "p", ("Job", "report-29012"))
    workload, _ = _resolve(
        pod, [_owned("Job", "report-29012", ("CronJob", "report")), _owned("CronJob", "report")]
    )
    assert (workload.kind, workload.name, workload.is_batch) == ("CronJob", "report", True)


def test_a_statefulset_pod_names_its_statefulset() -> None:
    workload, _ = _resolve(_owned("Pod", "db-0", ("StatefulSet", "db")), [_owned("StatefulSet", "db")])
    assert (workload.kind, workload.name, workload.names) == ("StatefulSet", "db", ("db-0", "db"))


def test_an_unreadable_owner_stops_the_chain_and_labels_are_offered() -> None:
    pod = _owned(
        "Pod", "p", ("ReplicaSet", "gone-rs"), labels={"app.kubernetes.io/name": "web", "app": "web"}
    )
    workload, _ = _resolve(pod, [])
    assert workload == Workload("ReplicaSet", "gone-rs", ("p", "gone-rs", "web"))


def test_a_pod_nothing_owns_is_its_own_workload_and_its_name_is_not_parsed() -> None:
    workload, asked = _resolve(_owned("Pod", "api-service-7d9f8b6c5d-x2x7q"), [])
    assert workload == Workload("Pod", "api-service-7d9f8b6c5d-x2x7q", ("api-service-7d9f8b6c5d-x2x7q",))
    assert asked == []


def _pod(
    status: dict[str, Any], image: str = "registry.local/api:1.4.2", ports: Any = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "web", "image": image}
    if ports:
        container["ports"] = ports
    return {
        "spec": {"nodeName": "n", "containers": [container]},
        "status": {"phase": "Running", "startTime": "2026-01-01T11:00:00Z", "containerStatuses": [status]},
    }


def _texts(lines: list[tuple[datetime, str]]) -> list[str]:
    return [text for _, text in lines]


def test_a_ready_service_starts_listens_and_serves() -> None:
    status = {"name": "web", "ready": True, "state": {"running": {"startedAt": "2026-01-01T11:30:00Z"}}}
    lines = default_log(_pod(status, ports=[{"containerPort": 9090}]), "web", False, False, ANCHOR)
    assert _texts(lines) == [
        'level=info msg="starting web" version=1.4.2',
        'level=info msg="configuration loaded" source=environment',
        'level=info msg="listening" addr=0.0.0.0:9090',
        'level=info msg="ready to serve requests"',
        'level=info msg="request served" method=GET path=/healthz status=200 duration=1ms',
        'level=info msg="request served" method=GET path=/ status=200 duration=12ms',
        'level=info msg="request served" method=GET path=/healthz status=200 duration=1ms',
    ]
    assert lines[0][0] == datetime(2026, 1, 1, 11, 30, tzinfo=UTC)
    assert [when for when, _ in lines] == sorted(when for when, _ in lines)


def test_a_running_service_that_is_not_ready_fails_its_readiness_check() -> None:
    status = {"name": "web", "ready": False, "state": {"running": {}}}
    lines = _texts(default_log(_pod(status, image="web"), "web", False, False, ANCHOR))
    assert lines[0] == 'level=info msg="starting web" version=latest'
    assert lines[-1] == 'level=warn msg="readiness check failed" path=/ready status=503'


def test_a_crash_looping_container_shows_its_last_run_ending_in_its_exit_code() -> None:
    status = {
        "name": "web",
        "ready": False,
        "restartCount": 7,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "startedAt": "2026-01-01T11:59:00Z"}},
    }
    for previous in (False, True):
        lines = default_log(_pod(status), "web", previous, False, ANCHOR)
        assert _texts(lines)[-1] == 'level=error msg="fatal error, shutting down" exit_code=2'
        assert lines[0][0] == datetime(2026, 1, 1, 11, 59, tzinfo=UTC)


def test_an_oom_killed_container_just_stops() -> None:
    status = {"name": "web", "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
    lines = _texts(default_log(_pod(status), "web", True, False, ANCHOR))
    assert lines[-1].startswith('level=info msg="request served"')
    assert not any("exit" in line or "error" in line for line in lines)


def test_a_job_container_works_and_finishes() -> None:
    status = {"name": "web", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    lines = _texts(default_log(_pod(status), "web", False, True, ANCHOR))
    assert lines == [
        'level=info msg="starting web" version=1.4.2',
        'level=info msg="processing"',
        'level=info msg="finished" exit_code=0',
    ]


def test_a_container_without_status_reads_as_a_service_started_with_its_pod() -> None:
    pod = _pod({"name": "other"})
    lines = default_log(pod, "web", False, False, ANCHOR)
    assert lines[0] == (
        datetime(2026, 1, 1, 11, 0, tzinfo=UTC),
        'level=info msg="starting web" version=1.4.2',
    )


@pytest.mark.parametrize(
    "status",
    [
        {"name": "web", "ready": True, "state": {"running": {}}},
        {"name": "web", "state": {"waiting": {}}, "lastState": {"terminated": {"exitCode": 1}}},
        {"name": "web", "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
    ],
)
def test_default_lines_never_name_the_machinery(status: dict[str, Any]) -> None:
    for previous in (False, True):
        text = " ".join(_texts(default_log(_pod(status), "web", previous, False, ANCHOR))).lower()
        for word in ("simulat", "fake", "mock", "oasis", "kwok", "twin", "sandbox"):
            assert word not in text


def test_top_reads_declared_signals_of_the_most_specific_name() -> None:
    fixtures = [
        FixtureEntry(kind="workload-signals", name="api", namespace="default", data={"cpu_usage": "95%"}),
        FixtureEntry(
            kind="workload-signals", name="api-pod", data={"cpu_usage": "300m", "memory_usage": "1Gi"}
        ),
    ]
    assert pod_usage(fixtures, ("api-pod", "rs", "api"), "default") == (300.0, 1024.0**3)
    assert pod_usage(fixtures, ("other", "rs", "api"), "default") == (950.0, 64 * 1024.0**2)
    assert pod_usage(fixtures, ("other", "rs", "api"), "prod") == (5.0, 64 * 1024.0**2)


def test_top_memory_is_the_prometheus_memory_series_now_when_no_use_is_declared() -> None:
    series = {
        "container_memory_working_set_bytes": [{"t": "-6h", "value": "500Mi"}, {"t": "now", "value": "1.6Gi"}]
    }
    fixtures = [FixtureEntry(kind="metrics", name="data-processor", data={"series": series})]
    assert prometheus_memory(fixtures, ("p", "data-processor"), "default") == 1.6 * 1024.0**3
    assert pod_usage(fixtures, ("p", "data-processor"), "default") == (5.0, 1.6 * 1024.0**3)
    trend = [
        FixtureEntry(
            kind="metrics", name="user-service", data={"memory_usage_trend": "monotonically_increasing"}
        )
    ]
    assert prometheus_memory(trend, ("user-service",), "default") == pytest.approx(0.95 * 512 * 1024.0**2)
    assert prometheus_memory(trend, ("other",), "default") is None


def test_a_declared_memory_use_wins_over_the_series() -> None:
    fixtures = [
        FixtureEntry(kind="workload-signals", name="api", data={"memory_usage": "250Mi"}),
        FixtureEntry(kind="metrics", name="api", data={"memory_usage_trend": "increasing"}),
    ]
    assert pod_usage(fixtures, ("api",), "default")[1] == 250 * 1024.0**2


def test_the_log_of_the_most_specific_name_is_read() -> None:
    fixtures = [
        FixtureEntry(kind="logs", name="web", data={"entries": ["from the label"]}),
        FixtureEntry(kind="logs", name="api-service", data={"entries": ["from the deployment"]}),
    ]
    entry = container_log(fixtures, ("pod", "rs", "api-service", "web"), "api-service", "default")
    assert entry is not None
    assert entry.name == "api-service"
    assert container_log(fixtures, ("pod", "rs", "other"), "app", "default") is None


def test_prometheus_serves_declared_use_as_cadvisor_series_top_shows_the_same() -> None:
    fixtures = [
        FixtureEntry(
            kind="workload-signals",
            name="order-service",
            namespace="production",
            data={"memory_usage": "250Mi", "cpu_usage": "95%"},
        ),
        FixtureEntry(
            kind="workload-signals",
            name="batch-x9k2",
            namespace="default",
            data={"cpu_usage": "300m", "pod": True},
        ),
    ]
    anchor = ANCHOR.timestamp()
    evaluator = Evaluator(signal_series(fixtures, "default"), anchor)
    memory = evaluator.instant('container_memory_working_set_bytes{service="order-service"}', anchor).vector
    assert [(dict(labels)["namespace"], value) for labels, value in memory] == [
        ("production", 250 * 1024.0**2)
    ]
    cpu = evaluator.instant("rate(container_cpu_usage_seconds_total[5m])", anchor).vector
    assert sorted((dict(labels).get("pod") or dict(labels)["service"], round(v, 6)) for labels, v in cpu) == [
        ("batch-x9k2", 0.3),
        ("order-service", 0.95),
    ]
    assert pod_usage(fixtures, ("p", "rs", "order-service"), "production") == (950.0, 250 * 1024.0**2)


def test_a_series_the_metrics_entry_gives_is_not_given_twice() -> None:
    fixtures = [
        FixtureEntry(
            kind="workload-signals", name="api", namespace="default", data={"memory_usage": "250Mi"}
        ),
        FixtureEntry(kind="metrics", name="api", data={"memory_usage_trend": "increasing"}),
    ]
    assert signal_series(fixtures, "default") == []
