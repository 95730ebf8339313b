"""Whether a declared workload shows its declared state, read from its live object and pods (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.sandbox.symptoms import Expectation, missing

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
