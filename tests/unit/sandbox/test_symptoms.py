"""Whether a declared workload shows its declared state, read from its live object and pods (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.sandbox.symptoms import Expectation, expectations, missing
from oasis_operator.sandbox.twin import parse_twin_state
from tests.unit.sandbox.test_twin import custom

Body = dict[str, Any]


def _deployment(replicas: int) -> Body:
    return {
        "metadata": {"generation": 1},
        "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas},
    }


def _init_failing_pod(name: str) -> Body:
    waiting = {"waiting": {"reason": "CrashLoopBackOff"}}
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [{"name": "wait-db", "state": waiting}],
            "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "PodInitializing"}}}],
        },
    }


def test_a_failing_init_container_without_a_declared_status_is_its_symptom() -> None:
    # No status declared reads as running; the failing init container still decides what the pods show.
    expect = Expectation("Deployment", "shop", "app", "running", 2, "app:1", init_failure=True)
    pods = [_init_failing_pod("app-a"), _init_failing_pod("app-b")]
    assert missing(expect, _deployment(2), pods) is None
    assert missing(expect, _deployment(2), pods[:1]) is not None  # one replica short


def test_an_ordered_statefulset_that_never_becomes_ready_shows_its_first_pod_only() -> None:
    state = [
        {"resource": "namespace/shop"},
        {"resource": "statefulset/db", "namespace": "shop", "replicas": 3, "status": "CrashLoopBackOff"},
        {"resource": "statefulset/queue", "namespace": "shop", "replicas": 2, "status": "pending"},
        {"resource": "statefulset/cache", "namespace": "shop", "replicas": 2, "status": "pending",
         "pod_management_policy": "Parallel"},
        {"resource": "statefulset/init", "namespace": "shop", "replicas": 2,
         "init_containers": [{"name": "wait", "status": "error"}]},
    ]  # fmt: skip
    parsed = parse_twin_state(custom(state, scope=["shop"]))
    found = {e.name: (e.replicas, e.waits_for_stage) for e in expectations(parsed, {("shop", "db")})}
    assert found == {
        "db": (3, True),  # up first, all three; then its crash Stage
        "queue": (1, False),  # OrderedReady: the next pod waits for a Ready one that never comes
        "cache": (2, False),  # Parallel: all of them, each Pending
        "init": (1, False),
    }
