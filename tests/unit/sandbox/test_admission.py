"""The twin Node's single write: created with its status; a follow-up only where a server drops it."""

from __future__ import annotations

from datetime import UTC, datetime

from oasis_operator.sandbox.admission import node_create_body, status_kept
from oasis_operator.sandbox.twin import build_twin
from tests.unit.sandbox.test_twin import profile

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def status(ready: str, **pressure: str) -> dict[str, object]:
    conditions = [{"type": t, "status": s} for t, s in pressure.items()]
    conditions.append({"type": "Ready", "status": ready, "reason": "KubeletReady"})
    return {"conditions": conditions, "capacity": {"cpu": "4", "pods": "110"}}


def test_a_node_is_created_with_its_declared_status_and_own_spec() -> None:
    body = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}}
    created = node_create_body(body, status("True"))
    assert created["status"] == status("True")
    assert created["spec"] == body["spec"]
    assert node_create_body(body, None) == body


def test_status_is_kept_only_when_the_answer_holds_every_declared_value() -> None:
    declared = status("True")
    # Fields the server defaults (daemonEndpoints) do not matter; every declared one does.
    defaulted = {**declared, "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}}
    assert status_kept({"status": defaulted}, declared)
    assert status_kept({}, None)
    assert not status_kept({"status": {}}, declared)  # a server that cleared status on create
    assert not status_kept({}, declared)
    changed = {**declared, "capacity": {"cpu": "4", "pods": "100"}}
    assert not status_kept({"status": changed}, declared)
    # Quantities are kept in canonical form: 4000m is stored as 4, the same amount.
    millis = {**declared, "capacity": {"cpu": "4000m", "pods": "110"}}
    assert status_kept({"status": declared}, millis)
    assert not status_kept({"status": declared}, {**declared, "capacity": {"cpu": "3900m", "pods": "110"}})
    # Only resource amounts compare by amount; elsewhere a different spelling is a different value.
    assert not status_kept({"status": {"phase": "4"}}, {"phase": "4000m"})
    # Lists compare whole: one condition missing or changed is a status still to write.
    fewer = {**declared, "conditions": declared["conditions"][:0]}  # type: ignore[index]
    assert not status_kept({"status": fewer}, declared)
    # A pod's create answer (status cleared to Pending) never passes for its declared status.
    assert not status_kept({"status": {"phase": "Pending"}}, {"phase": "Running"})


def test_every_shipped_twin_node_is_created_whole_with_its_pool_taint() -> None:
    nodes = 0
    for scenario in profile().scenarios:
        for obj in build_twin(scenario, "e1", "sbx", NOW).objects:
            if obj.kind != "Node":
                continue
            nodes += 1
            created = node_create_body(obj.body, obj.status)
            assert created["status"] == obj.status, (scenario.id, obj.name)
            # Only the environment's own pool taint: the node lifecycle controller keeps the condition
            # taints (memory pressure, not-ready) in step with the declared conditions.
            assert created["spec"]["taints"] == [{"key": "node-pool", "value": "e1", "effect": "NoSchedule"}]
            assert status_kept(created, obj.status), (scenario.id, obj.name)
    assert nodes > 50, nodes
