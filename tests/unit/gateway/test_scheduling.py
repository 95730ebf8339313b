"""The scheduler's messages said of the agent's own nodes, not of the shared plane's (pure)."""

from __future__ import annotations

import json

import pytest

from oasis_operator.gateway.scheduling import own_nodes_text

# Seen on the local plane: 2 nodes of the agent's own, 3 of another environment with one of them cordoned.
SEEN = (
    "0/5 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu, 2 node(s) had untolerated "
    "taint(s). preemption: 0/5 nodes are available: 2 No preemption victims found for incoming pod, "
    "3 Preemption is not helpful for scheduling."
)
OWN = (
    "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
    "2 No preemption victims found for incoming pod."
)


def test_the_other_environments_nodes_leave_the_message() -> None:
    assert own_nodes_text(SEEN, own=2, own_cordoned=0) == OWN


def test_a_message_inside_a_json_answer_is_rewritten_in_place() -> None:
    events = {
        "items": [{"reason": "FailedScheduling", "message": SEEN}, {"reason": "Pulled", "message": "x."}]
    }
    out = json.loads(own_nodes_text(json.dumps(events), own=2, own_cordoned=0))
    assert [e["message"] for e in out["items"]] == [OWN, "x."]


def test_the_agents_own_cordoned_and_tainted_nodes_stay_counted() -> None:
    # Own: 3 nodes, one cordoned, one with memory pressure, one full; others: 4, one of them cordoned.
    seen = (
        "0/7 nodes are available: 1 Insufficient memory, 2 node(s) were unschedulable, 4 node(s) had "
        "untolerated taint(s). preemption: 0/7 nodes are available: 1 No preemption victims found for "
        "incoming pod, 6 Preemption is not helpful for scheduling."
    )
    assert own_nodes_text(seen, own=3, own_cordoned=1) == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), 1 node(s) were "
        "unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming "
        "pod, 2 Preemption is not helpful for scheduling."
    )


def test_a_pod_tolerating_every_taint_meets_the_other_nodes_at_their_node_selector() -> None:
    seen = (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    assert own_nodes_text(seen, own=1, own_cordoned=0) == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


def test_a_pod_bound_to_one_node_has_the_others_left_out() -> None:
    seen = (
        "0/6 nodes are available: 1 Insufficient memory, 5 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert own_nodes_text(seen, own=3, own_cordoned=0) == (
        "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_reasons_keep_the_schedulers_string_order() -> None:
    # The scheduler sorts "count reason" as strings: "10 ..." before "2 ...".
    seen = (
        "0/14 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s), "
        "2 Insufficient memory."
    )
    assert own_nodes_text(seen, own=12, own_cordoned=0) == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory."
    )


@pytest.mark.parametrize(
    "text",
    [
        "0/2 nodes are available: 2 Insufficient cpu.",  # the plane holds only the agent's nodes
        "0/5 nodes are available: 5 Insufficient cpu.",  # not what another environment's nodes say
        "Successfully assigned shop/web-1 to node-1",
        "0/5 nodes are available: something the scheduler never writes.",
    ],
)
def test_a_message_without_other_nodes_in_it_is_left_as_it_is(text: str) -> None:
    assert own_nodes_text(text, own=2, own_cordoned=0) == text


def test_an_extended_resource_with_a_dot_is_one_reason() -> None:
    seen = "0/4 nodes are available: 2 Insufficient example.com/gpu, 2 node(s) had untolerated taint(s)."
    assert (
        own_nodes_text(seen, own=2, own_cordoned=0)
        == "0/2 nodes are available: 2 Insufficient example.com/gpu."
    )


def test_no_nodes_of_its_own_is_said_as_the_scheduler_says_it() -> None:
    seen = "0/3 nodes are available: 3 node(s) had untolerated taint(s)."
    assert own_nodes_text(seen, own=0, own_cordoned=0) == "no nodes available to schedule pods"
