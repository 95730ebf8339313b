"""Where the scheduler would put a new pod of the twin, from the live Nodes (pure functions).

The sandbox cluster runs no scheduler and no node lifecycle controller, so the twin dynamics decide
placement themselves, refusing the nodes a real scheduler refuses:

* a node that is not Ready, or reports MemoryPressure, DiskPressure or PIDPressure: the node lifecycle
  controller taints it (`node.kubernetes.io/not-ready`, `…/memory-pressure`, `…/disk-pressure`,
  `…/pid-pressure`, all `NoSchedule`; `…/unreachable` when Ready is Unknown), and pods of Deployments do
  not tolerate those taints. Those taints follow the node's conditions as they are now, whatever the
  node's `spec.taints` still says (no lifecycle controller keeps them in step in the sandbox);
* a cordoned node (`spec.unschedulable`), and a node with a `NoSchedule`/`NoExecute` taint the pod does
  not tolerate;
* a node whose labels do not satisfy the pod's `nodeSelector` or required node affinity.

Among the nodes left, a pod goes where fewest of its ReplicaSet's pods run (ties round-robin from a
start index the caller advances). With none left the pod stays Pending, with the scheduler's message
("0/3 nodes are available: …").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

Body = dict[str, Any]

CONDITION_TAINTS = {
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
}
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
CONDITION_TAINT_KEYS = frozenset({*CONDITION_TAINTS.values(), NOT_READY_TAINT, UNREACHABLE_TAINT})
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _conditions(node: Body) -> dict[str, str]:
    conditions = (node.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): str(c.get("status")) for c in conditions if isinstance(c, dict)}


def node_taints(node: Body) -> list[Body]:
    """The node's taints as the scheduler sees them: its own, with the condition taints its conditions
    imply now (the node lifecycle controller's, which the sandbox does not run, so a stale one is dropped).
    """
    own = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
    taints = [t for t in own if t.get("key") not in CONDITION_TAINT_KEYS]
    conditions = _conditions(node)
    ready = conditions.get("Ready", "True")
    if ready == "False":
        taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
    elif ready != "True":
        taints.append({"key": UNREACHABLE_TAINT, "effect": "NoSchedule"})
    for condition, key in CONDITION_TAINTS.items():
        if conditions.get(condition) == "True":
            taints.append({"key": key, "effect": "NoSchedule"})
    return taints


def tolerates(pod_spec: Body, taint: Body) -> bool:
    """True when one of the pod's tolerations matches the taint (key, value and effect)."""
    for toleration in pod_spec.get("tolerations") or []:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        key = toleration.get("key")
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _term_matches(term: Body, labels: dict[str, str]) -> bool:
    for expression in term.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = [str(v) for v in expression.get("values") or []]
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def selects(pod_spec: Body, node: Body) -> bool:
    """True when the node's labels satisfy the pod's nodeSelector and required node affinity."""
    labels = {str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()}
    selector = pod_spec.get("nodeSelector") or {}
    if any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(_term_matches(term, labels) for term in terms)


def refusal(pod_spec: Body, node: Body) -> str | None:
    """Why the scheduler would not place the pod on this node (its message fragment), or None."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "node(s) were unschedulable"
    for taint in node_taints(node):
        if taint.get("effect") in BLOCKING_EFFECTS and not tolerates(pod_spec, taint):
            value = taint.get("value") or ""
            return f"node(s) had taint {{{taint['key']}: {value}}}, that the pod didn't tolerate"
    if not selects(pod_spec, node):
        return "node(s) didn't match node selector"
    return None


def place(
    pod_spec: Body, nodes: Sequence[Body], start: int, occupancy: Mapping[str, int] | None = None
) -> tuple[str | None, str]:
    """(node name, "") for the pod, or (None, the scheduler's message) when no node fits.

    Of the nodes that fit, the one with the fewest of the pod's siblings (`occupancy`: pods of the same
    ReplicaSet per node), as the scheduler's default spreading prefers; ties go round-robin from `start`.
    """
    fitting: list[str] = []
    refused: Counter[str] = Counter()
    for node in nodes:
        reason = refusal(pod_spec, node)
        if reason is None:
            fitting.append(str(node["metadata"]["name"]))
        else:
            refused[reason] += 1
    if fitting:
        first = start % len(fitting)
        counts = occupancy or {}
        return min(fitting[first:] + fitting[:first], key=lambda name: counts.get(name, 0)), ""
    details = ", ".join(f"{count} {reason}" for reason, count in sorted(refused.items()))
    return None, f"0/{len(nodes)} nodes are available: {details}." if details else "no nodes available."
