"""Placement of new twin pods: the nodes a scheduler refuses, and its message when none is left (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.sandbox.scheduling import node_taints, place, refusal

POD: dict[str, Any] = {"containers": [{"name": "web", "image": "web:1"}]}


def node(
    name: str, *, unschedulable: bool = False, taints: list[Any] | None = None, **conditions: str
) -> Any:
    statuses = {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False"}
    statuses.update(conditions)
    spec: dict[str, Any] = {"unschedulable": True} if unschedulable else {}
    if taints:
        spec["taints"] = taints
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "disk": "ssd"}},
        "spec": spec,
        "status": {"conditions": [{"type": t, "status": s} for t, s in statuses.items()]},
    }


def test_pressure_and_readiness_become_the_taints_the_node_controller_sets() -> None:
    assert node_taints(node("n")) == []
    assert node_taints(node("n", DiskPressure="True", MemoryPressure="True")) == [
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"},
    ]
    assert node_taints(node("n", Ready="False")) == [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    ]
    assert node_taints(node("n", Ready="Unknown")) == [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
    ]


def test_condition_taints_follow_the_conditions_not_stale_spec_taints() -> None:
    # NodeTaint admission marks every new node not-ready; with no lifecycle controller it would never lift.
    admitted = node("n", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    assert node_taints(admitted) == []
    assert refusal(POD, admitted) is None
    recovered = node("n", taints=[{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}])
    assert node_taints(recovered) == []
    own = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    assert node_taints(node("n", taints=[own], PIDPressure="True")) == [
        own,
        {"key": "node.kubernetes.io/pid-pressure", "effect": "NoSchedule"},
    ]


def test_refused_nodes_and_why() -> None:
    disk = "node(s) had taint {node.kubernetes.io/disk-pressure: }, that the pod didn't tolerate"
    assert refusal(POD, node("n", DiskPressure="True")) == disk
    assert refusal(POD, node("n", MemoryPressure="True")) is not None
    assert refusal(POD, node("n", PIDPressure="True")) is not None
    assert refusal(POD, node("n", Ready="False")) is not None
    assert refusal(POD, node("n", unschedulable=True)) == "node(s) were unschedulable"
    gpu = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    assert (
        refusal(POD, node("n", taints=gpu)) == "node(s) had taint {gpu: true}, that the pod didn't tolerate"
    )
    assert refusal(POD, node("n", taints=[{"key": "gpu", "effect": "PreferNoSchedule"}])) is None
    assert (
        refusal({**POD, "nodeSelector": {"disk": "hdd"}}, node("n")) == "node(s) didn't match node selector"
    )
    assert refusal(POD, node("n")) is None


def test_tolerations_and_affinity_are_honoured() -> None:
    tolerant = {**POD, "tolerations": [{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists"}]}
    assert refusal(tolerant, node("n", DiskPressure="True")) is None
    assert refusal(tolerant, node("n", MemoryPressure="True")) is not None
    avoid = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["b"]}
                        ]
                    }
                ]
            }
        }
    }
    assert refusal({**POD, "affinity": avoid}, node("a")) is None
    assert refusal({**POD, "affinity": avoid}, node("b")) == "node(s) didn't match node selector"


def test_new_pods_spread_over_the_nodes_that_fit() -> None:
    nodes = [node("node-1"), node("node-2", DiskPressure="True"), node("node-3")]
    assert [place(POD, nodes, start)[0] for start in range(4)] == ["node-1", "node-3", "node-1", "node-3"]
    healthy = [node("node-1"), node("node-2"), node("node-3")]
    assert [place(POD, healthy, start)[0] for start in range(3)] == ["node-1", "node-2", "node-3"]
    # Fewest siblings first, whatever the rotation says.
    assert {place(POD, nodes, start, {"node-1": 2, "node-3": 1})[0] for start in range(4)} == {"node-3"}
    assert place(POD, healthy, 0, {"node-1": 1, "node-3": 1}) == ("node-2", "")


def test_with_no_node_left_the_pod_waits_with_the_schedulers_message() -> None:
    nodes = [
        node("node-1", unschedulable=True),
        node("node-2", DiskPressure="True"),
        node("node-3", Ready="False"),
    ]
    assert place(POD, nodes, 0) == (
        None,
        "0/3 nodes are available: "
        "1 node(s) had taint {node.kubernetes.io/disk-pressure: }, that the pod didn't tolerate, "
        "1 node(s) had taint {node.kubernetes.io/not-ready: }, that the pod didn't tolerate, "
        "1 node(s) were unschedulable.",
    )
