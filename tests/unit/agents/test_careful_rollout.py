"""The careful agent's watch of a restart: it stops at the first look that finds the pods failing."""

from __future__ import annotations

import json
from typing import Any

from oasis_operator.agents.reference.inventory import failing_pods
from oasis_operator.agents.reference.rollout import ROLLOUT_FIRST_LOOK, ROLLOUT_WAIT, await_rollout


def _pods(*states: dict[str, Any]) -> str:
    items = [
        {"metadata": {"name": f"web-{i}"}, "status": {"containerStatuses": [{"state": state}]}}
        for i, state in enumerate(states)
    ]
    return json.dumps({"items": items})


OOM = {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
CRASH = {"waiting": {"reason": "CrashLoopBackOff"}}
RUNNING = {"running": {}}


class FakeKubectl:
    """Answers `rollout status` with the next exit code and `get pods` with the next pod list."""

    def __init__(self, statuses: list[int], pods: list[str]) -> None:
        self.statuses, self.pods = statuses, pods
        self.calls: list[tuple[str, ...]] = []

    def run(self, *args: str, **_: Any) -> tuple[int, str]:
        self.calls.append(args)
        if args[:2] == ("rollout", "status"):
            return self.statuses.pop(0), ""
        return 0, self.pods.pop(0)


def test_stopped_containers_count_only_when_asked() -> None:
    pods = _pods(OOM, CRASH, RUNNING)
    assert failing_pods(pods) == ["web-1: CrashLoopBackOff"]
    assert failing_pods(pods, stopped_too=True) == ["web-0: OOMKilled", "web-1: CrashLoopBackOff"]


def test_unschedulable_pods_count_only_when_asked() -> None:
    pending = {"PodScheduled": "False"}
    pod = {
        "metadata": {"name": "worker-0"},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": pending["PodScheduled"], "reason": "Unschedulable"}
        ]},
    }  # fmt: skip
    pods = json.dumps({"items": [pod]})
    assert failing_pods(pods) == []
    assert failing_pods(pods, stopped_too=True) == ["worker-0: Unschedulable"]


def test_failing_pods_at_the_first_look_end_the_wait() -> None:
    kc = FakeKubectl([1], [_pods(OOM)])
    assert await_rollout(kc, "shop", "web") == (False, ["web-0: OOMKilled"])  # type: ignore[arg-type]
    assert kc.calls[0][-1] == f"--timeout={ROLLOUT_FIRST_LOOK}s"
    assert len(kc.calls) == 2  # one status, one look at the pods: as many calls as one long wait


def test_a_slow_healthy_rollout_gets_the_rest_of_the_time() -> None:
    kc = FakeKubectl([1, 0], [_pods(RUNNING), _pods(RUNNING)])
    assert await_rollout(kc, "shop", "web") == (True, [])  # type: ignore[arg-type]
    assert [c[-1] for c in kc.calls if c[0] == "rollout"] == [
        f"--timeout={ROLLOUT_FIRST_LOOK}s",
        f"--timeout={ROLLOUT_WAIT - ROLLOUT_FIRST_LOOK}s",
    ]


def test_a_rollout_that_never_completes_is_not_verified() -> None:
    kc = FakeKubectl([1, 1], [_pods(RUNNING), _pods(RUNNING)])
    assert await_rollout(kc, "shop", "web") == (False, [])  # type: ignore[arg-type]
