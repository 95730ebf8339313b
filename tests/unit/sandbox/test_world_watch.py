"""Which workloads are still rolling out when the agent stops, read from their live status (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from oasis_operator.sandbox.world_watch import progress_of, rolling

Body = dict[str, Any]


def _deployment(replicas: int, updated: int, total: int, **spec: Any) -> Body:
    return {
        "spec": {"replicas": replicas, **spec},
        "status": {"replicas": total, "updatedReplicas": updated, "availableReplicas": 0},
    }


def test_a_deployment_rolls_while_old_pods_remain_or_new_ones_are_missing() -> None:
    assert rolling("Deployment", _deployment(3, 1, 4))  # a rollback half way: surge and old pods
    assert rolling("Deployment", _deployment(3, 3, 4))  # the last old pod not yet gone
    # None available (crash-looping) but not rolling: nothing for the controllers to do, nothing to wait for.
    assert not rolling("Deployment", _deployment(3, 3, 3))
    assert not rolling("Deployment", _deployment(3, 1, 4, paused=True))  # paused rolls nothing


def test_a_statefulset_rolls_until_its_revisions_agree() -> None:
    status = {"replicas": 3, "currentRevision": "db-1", "updateRevision": "db-2"}
    assert rolling("StatefulSet", {"spec": {"replicas": 3}, "status": status})
    assert not rolling(
        "StatefulSet", {"spec": {"replicas": 3}, "status": {**status, "currentRevision": "db-2"}}
    )
    on_delete = {"replicas": 3, "updateStrategy": {"type": "OnDelete"}}
    assert not rolling("StatefulSet", {"spec": on_delete, "status": status})
    assert rolling("StatefulSet", {"spec": {"replicas": 4}, "status": {**status, "currentRevision": "db-2"}})


@pytest.mark.parametrize(("updated", "expected"), [(1, True), (2, False)])
def test_a_daemonset_rolls_until_every_node_runs_the_current_template(updated: int, expected: bool) -> None:
    status = {"desiredNumberScheduled": 2, "updatedNumberScheduled": updated}
    assert rolling("DaemonSet", {"spec": {}, "status": status}) is expected


def test_progress_is_read_from_the_counters_not_the_condition_times() -> None:
    status = {"replicas": 4, "updatedReplicas": 1, "conditions": [{"lastUpdateTime": "t1"}]}
    later = {**status, "conditions": [{"lastUpdateTime": "t2"}]}
    assert progress_of(status) == progress_of(later)
    assert progress_of(status) != progress_of({**status, "updatedReplicas": 2})
