"""Creation waves: the plan's order kept wherever it matters, over every shipped scenario."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from oasis_operator.sandbox.twin import TwinObject, build_twin
from oasis_operator.sandbox.waves import INDEPENDENT, create_in_waves, creation_waves
from tests.unit.sandbox.test_twin import profile

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def obj(kind: str, name: str, owner: tuple[str, str] | None = None) -> TwinObject:
    return TwinObject("v1", kind, name, {"metadata": {"name": name}}, "ns", owner=owner)


def test_owners_come_a_wave_before_what_they_own_and_barriers_stand_alone() -> None:
    plan = [
        obj("ConfigMap", "a"),
        obj("Deployment", "web"),
        obj("ReplicaSet", "web-1", owner=("Deployment", "web")),
        obj("Pod", "web-1-x", owner=("ReplicaSet", "web-1")),
        obj("Secret", "s"),
        obj("ResourceQuota", "q"),
        obj("Pod", "late"),
    ]
    names = [[o.name for o in wave] for wave in creation_waves(plan)]
    # The Secret needs nothing before it: it goes with the first wave, not after web's pod.
    assert names == [["a", "web", "s"], ["web-1"], ["web-1-x"], ["q"], ["late"]]


def test_several_workloads_take_three_waves_not_three_each() -> None:
    plan = []
    for name in ("api", "web", "db"):
        plan += [
            obj("Deployment", name),
            obj("ReplicaSet", f"{name}-1", owner=("Deployment", name)),
            obj("Pod", f"{name}-1-x", owner=("ReplicaSet", f"{name}-1")),
        ]
    plan.append(obj("Pod", "bare"))
    names = [[o.name for o in wave] for wave in creation_waves(plan)]
    assert names == [
        ["api", "web", "db", "bare"],
        ["api-1", "web-1", "db-1"],
        ["api-1-x", "web-1-x", "db-1-x"],
    ]


def test_an_owner_before_a_barrier_still_precedes_what_it_owns_after_it() -> None:
    plan = [
        obj("Deployment", "web"),
        obj("ReplicaSet", "web-1", owner=("Deployment", "web")),
        obj("LimitRange", "limits"),
        obj("Pod", "web-1-x", owner=("ReplicaSet", "web-1")),
        obj("ConfigMap", "c"),
    ]
    names = [[o.name for o in wave] for wave in creation_waves(plan)]
    assert names == [["web"], ["web-1"], ["limits"], ["web-1-x", "c"]]


def test_every_shipped_plan_keeps_each_object_once_in_order_with_owners_first() -> None:
    for scenario in profile().scenarios:
        plan = [o for o in build_twin(scenario, "e1", "sbx", NOW).objects if o.kind != "Namespace"]
        waves = creation_waves(plan)
        flat = [o.key for wave in waves for o in wave]
        assert sorted(flat) == sorted(o.key for o in plan), scenario.id
        assert len(set(flat)) == len(flat), scenario.id
        position = {o.key: i for i, o in enumerate(plan)}
        for wave in waves:  # within a wave, plan order
            assert [position[o.key] for o in wave] == sorted(position[o.key] for o in wave), scenario.id
        wave_of = {o.key: i for i, wave in enumerate(waves) for o in wave}
        for o in plan:
            if o.owner is not None and (o.owner[0], o.namespace, o.owner[1]) in wave_of:
                assert wave_of[(o.owner[0], o.namespace, o.owner[1])] < wave_of[o.key], (scenario.id, o.key)
            if o.kind not in INDEPENDENT:
                assert waves[wave_of[o.key]] == [o], (scenario.id, o.key)
                # A barrier: everything before it in the plan is in an earlier wave, all after in a later.
                for other in plan:
                    if position[other.key] < position[o.key]:
                        assert wave_of[other.key] < wave_of[o.key], (scenario.id, o.key, other.key)
                    elif position[other.key] > position[o.key]:
                        assert wave_of[other.key] > wave_of[o.key], (scenario.id, o.key, other.key)


def test_shipped_plans_need_fewer_waves_than_objects() -> None:
    objects = waves = 0
    for scenario in profile().scenarios:
        plan = [o for o in build_twin(scenario, "e1", "sbx", NOW).objects if o.kind != "Namespace"]
        objects += len(plan)
        waves += len(creation_waves(plan))
    assert waves * 3 < objects, (waves, objects)


def test_a_failed_create_is_raised_after_its_wave_has_ended() -> None:
    ended: list[str] = []
    slow_started = threading.Event()

    def create(o: TwinObject) -> None:
        if o.name == "bad":
            assert slow_started.wait(30)
            raise RuntimeError("409 conflict")
        slow_started.set()
        threading.Event().wait(0.2)
        ended.append(o.name)

    plan = [obj("ConfigMap", "slow"), obj("ConfigMap", "bad"), obj("ResourceQuota", "never")]
    with pytest.raises(RuntimeError, match="409"):
        create_in_waves(plan, create, at_once=4)
    assert ended == ["slow"], "the wave's other create finished; the next wave never started"


def test_one_at_a_time_is_plain_plan_order() -> None:
    seen: list[str] = []
    plan = [obj("ConfigMap", n) for n in "abc"]
    create_in_waves(plan, lambda o: seen.append(o.name), at_once=1)
    assert seen == ["a", "b", "c"]
