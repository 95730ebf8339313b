"""The scheduler's "0/N nodes are available" said of the agent's own cluster, not of the shared plane.

Every environment's pods are scheduled by the one kube-scheduler of the plane, which weighs every Node it
knows: when a pod fits nowhere, its FailedScheduling event and its `PodScheduled` condition count the
nodes of every other environment too (`0/14 nodes are available: 2 Insufficient cpu, 12 node(s) had
untolerated taint(s)`), which tells the agent that other clusters share its own and how large they are.
A cluster of the agent's own would say `0/2 nodes are available: 2 Insufficient cpu`.

The other environments' nodes fail for the agent's pods at the first of these filters, in the scheduler's
order: NodeUnschedulable (`node(s) were unschedulable`, a node another agent cordoned), TaintToleration
(`node(s) had untolerated taint(s)`: every environment's nodes carry its own pool taint, which only its
own pods tolerate) and, for a pod that tolerates every taint, NodeAffinity (`node(s) didn't match Pod's
node affinity/selector`: the pool's node selector, which the API server gives every pod of the
environment); a pod bound by its affinity to one node (a DaemonSet's) has the rest left out by a
pre-filter (`node(s) didn't satisfy plugin(s) [NodeAffinity]`). Each of these reasons can also come from
the agent's own nodes (one it cordoned, a pressure taint, a selector of its own), so the others' share
is taken in that order: the cordoned nodes beyond the agent's own cordoned ones (read when the answer
is given), then the rest from the taint, selector and left-out counts. Preemption counts every such node
as one where "Preemption is not helpful for scheduling". Reasons left at zero go, the rest keep the
scheduler's order (sorted as strings), and the totals become the agent's own node count.

Pure functions.
"""

from __future__ import annotations

import re

UNSCHEDULABLE = "node(s) were unschedulable"
UNTOLERATED = "node(s) had untolerated taint(s)"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ABSENT = "node(s) didn't satisfy plugin(s)"  # nodes a pre-filter left out (a DaemonSet pod's one node)
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_NODES = "no nodes available to schedule pods"
MARKER = "nodes are available"
# One message: its reasons end at the "." before the preemption part or at the end of the (JSON) string.
_MESSAGE = re.compile(
    r"0/(?P<total>\d+) nodes are available: (?P<reasons>\d+ [^\"]*?)\."
    r"(?P<preemption> preemption: 0/(?P<ptotal>\d+) nodes are available: (?P<preasons>\d+ [^\"]*?)\.)?"
    r"(?=[\"\\]|$)"
)
_ITEM = re.compile(r"(\d+) (.+)")


def _parse(reasons: str) -> dict[str, int] | None:
    """ "2 Insufficient cpu, 1 node(s) were unschedulable" → counts by reason (None: not that shape)."""
    counts: dict[str, int] = {}
    for item in re.split(r", (?=\d+ )", reasons):
        match = _ITEM.fullmatch(item)
        if match is None:
            return None
        counts[match.group(2)] = counts.get(match.group(2), 0) + int(match.group(1))
    return counts


def _said(total: int, counts: dict[str, int]) -> str:
    items = sorted(f"{n} {reason}" for reason, n in counts.items() if n > 0)
    return f"0/{total} nodes are available: {', '.join(items)}."


def own_message(match: re.Match[str], own: int, own_cordoned: int) -> str:
    """One scheduler message with the other environments' nodes taken out (unchanged if it holds none
    or is not of the shape the scheduler writes)."""
    text = match.group(0)
    total = int(match.group("total"))
    others = total - own
    counts = _parse(match.group("reasons"))
    if others <= 0 or counts is None:
        return text
    if own <= 0:
        return NO_NODES
    # Each other node shows one reason; the cordoned ones beyond the agent's own come first.
    taken = {UNSCHEDULABLE: min(max(counts.get(UNSCHEDULABLE, 0) - own_cordoned, 0), others)}
    left = others - taken[UNSCHEDULABLE]
    for reason in [UNTOLERATED, AFFINITY, *(r for r in counts if r.startswith(ABSENT))]:
        taken[reason] = min(counts.get(reason, 0), left)
        left -= taken[reason]
    if left:
        return text  # not the plane this module knows: say what the scheduler said
    for reason, n in taken.items():
        if n:
            counts[reason] -= n
    out = _said(own, counts)
    if match.group("preemption"):
        preempt = _parse(match.group("preasons"))
        if preempt is None or preempt.get(NOT_HELPFUL, 0) < others:
            return text
        preempt[NOT_HELPFUL] -= others
        out += " preemption: " + _said(int(match.group("ptotal")) - others, preempt)
    return out


def own_nodes_text(text: str, own: int, own_cordoned: int) -> str:
    """Every scheduler message in `text` (a JSON answer, a watch event) said of the agent's own nodes:
    `own` of them, `own_cordoned` cordoned now."""
    if MARKER not in text:
        return text
    return _MESSAGE.sub(lambda m: own_message(m, own, own_cordoned), text)
