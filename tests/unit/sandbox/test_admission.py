"""The twin Node's single write: created with status and taints; a follow-up only where a server needs it."""

from __future__ import annotations

from datetime import UTC, datetime

from oasis_operator.sandbox.admission import (
    node_create_body,
    node_taints_of,
    status_kept,
    taints_to_write,
)
from oasis_operator.sandbox.scheduling import NOT_READY_TAINT
from oasis_operator.sandbox.twin import build_twin
from tests.unit.sandbox.test_twin import profile

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NOT_READY = {"key": NOT_READY_TAINT, "effect": "NoSchedule"}


def status(ready: str, **pressure: str) -> dict[str, object]:
    conditions = [{"type": t, "status": s} for t, s in pressure.items()]
    conditions.append({"type": "Ready", "status": ready, "reason": "KubeletReady"})
    return {"conditions": conditions, "capacity": {"cpu": "4", "pods": "110"}}


def test_a_ready_node_is_created_untainted_with_its_status() -> None:
    body = {"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.0.0/24"}}
    created = node_create_body(body, status("True"))
    assert created == {
        "metadata": {"name": "n"},
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": status("True"),
    }
    assert body == {"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.0.0/24"}}  # not changed


def test_conditions_become_taints_in_the_create_and_own_taints_stay() -> None:
    own = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    body = {"metadata": {"name": "n"}, "spec": {"taints": [own, NOT_READY]}}
    created = node_create_body(body, status("False", MemoryPressure="True"))
    assert created["spec"]["taints"] == [
        own,
        NOT_READY,
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
    ]
    assert node_taints_of(body, status("True")) == [own]  # a stale not-ready taint goes


def test_no_taint_write_when_the_answer_has_exactly_the_taints() -> None:
    # The local plane (no NodeTaint admission): a ready node's answer has none, as wanted.
    assert taints_to_write({"spec": {}}, []) is None
    # NodeTaint admission added not-ready to a ready node: the patch is still sent, to clear it.
    assert taints_to_write({"spec": {"taints": [NOT_READY]}}, []) == []
    # A node declared NotReady: the admission's taint is the one it should have, no patch either way.
    assert taints_to_write({"spec": {"taints": [NOT_READY]}}, [NOT_READY]) is None
    assert taints_to_write({"spec": {}}, [NOT_READY]) == [NOT_READY]


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


def test_every_shipped_twin_node_gets_its_taints_in_the_create() -> None:
    nodes = 0
    for scenario in profile().scenarios:
        for obj in build_twin(scenario, "e1", "sbx", NOW).objects:
            if obj.kind != "Node":
                continue
            nodes += 1
            created = node_create_body(obj.body, obj.status)
            assert created["status"] == obj.status, (scenario.id, obj.name)
            wanted = node_taints_of(obj.body, obj.status)
            assert taints_to_write(created, wanted) is None, (scenario.id, obj.name)
            assert status_kept(created, obj.status), (scenario.id, obj.name)
    assert nodes > 50, nodes
