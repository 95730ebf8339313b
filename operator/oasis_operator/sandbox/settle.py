"""Waiting for the world: until the sandbox's controllers, scheduler and kwok show what a scenario declares.

Provisioning creates the twin and then waits here, before the before-snapshot, so that the agent meets
the declared symptoms and nothing the cluster does on its own after that reads as a change in the
window: every declared workload in its declared state (`sandbox.symptoms`), every workload the twin
builds without an entry of its own up, each Node's condition taints in step with its conditions, and the
faults whose Stage comes once the workload is up (`sandbox.faults.after_pods`) applied and shown in
turn. A world that does not get there in time is a SandboxError naming what each late object shows
instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import MERGE_PATCH, request, resource_path
from oasis_operator.models.declared_parse import ParsedState
from oasis_operator.models.environment import Environment
from oasis_operator.sandbox.errors import SandboxError
from oasis_operator.sandbox.faults import WorkloadFault, after_pods, fault_stages, touches_pods
from oasis_operator.sandbox.kwok import apply_stages
from oasis_operator.sandbox.symptoms import (
    Expectation,
    condition_taints,
    expectations,
    implied_taints,
    missing,
)
from oasis_operator.sandbox.teardown import ENV_LABEL
from oasis_operator.sandbox.twin import TwinPlan
from oasis_operator.sandbox.twin.plan import Body

SETTLE_TIMEOUT = 60.0
POLL = 0.1
NUDGE = 1.5
TOUCH_ANNOTATION = "kubernetes.io/change-cause"


def settle(
    api: ApiClient, env: Environment, plan: TwinPlan, parsed: ParsedState, faults: list[WorkloadFault]
) -> None:
    """Wait until every declared workload shows its declared state; the faults whose Stage names
    the workload's pods get it once those exist, and are waited for in turn. SandboxError naming
    what each late workload shows instead, when the world does not get there in time."""
    labels = {ENV_LABEL: env.id}
    late = [f for f in faults if after_pods(f)]
    after = {(f.namespace, f.workload) for f in late}
    expected = expectations(parsed, after)
    expected += _implied(env, plan, expected)
    _wait_for(api, env, expected)
    if not late:
        return
    stages = []
    touch: list[tuple[str, str]] = []
    for fault in late:
        namespace = env.sandbox_namespace(fault.namespace) or fault.namespace
        pods = request(
            api,
            "GET",
            resource_path("Pod", namespace),
            query={"labelSelector": f"app={fault.workload}"},
        )["items"]
        names = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
        made = fault_stages(env, fault, labels, names)
        stages += made
        if made and touches_pods(fault):
            touch.extend((namespace, name) for name in names)
    apply_stages(api, stages)

    def nudge() -> None:
        for namespace, name in touch:
            _touch(api, namespace, name)

    _wait_for(
        api,
        env,
        [replace(e, waits_for_stage=False) for e in expected if (e.namespace, e.name) in after],
        nudge if touch else None,
    )


def _touch(api: ApiClient, namespace: str, name: str) -> None:
    """Make kwok look at a running pod again (it matches Stages on a pod's changes, not on new
    Stages): an annotation set and removed, which leaves the pod as it was."""
    path = resource_path("Pod", namespace, name)
    for value in ("1", None):
        patch = {"metadata": {"annotations": {TOUCH_ANNOTATION: value}}}
        try:
            request(api, "PATCH", path, patch, content_type=MERGE_PATCH)
        except ApiException as exc:
            if exc.status != 404:
                raise


def _wait_for(
    api: ApiClient, env: Environment, expected: list[Expectation], nudge: Callable[[], None] | None = None
) -> None:
    """Poll until every expectation is met; `nudge` (kwok to look again) now and every NUDGE seconds,
    as kwok may learn of a new Stage after the pod's change that should have matched it."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    pending = list(expected)
    nudged = 0.0
    while pending:
        if nudge is not None and time.monotonic() - nudged > NUDGE:
            nudge()
            nudged = time.monotonic()
        seen = []
        for expect in pending:
            gap = missing(expect, *_observe(api, env, expect))
            if gap is not None:
                seen.append((expect, gap))
        pending = [expect for expect, _ in seen]
        if not pending:
            return
        if time.monotonic() > deadline:
            gaps = "; ".join(gap for _, gap in seen)
            raise SandboxError(
                f"{env.scenario_id}: the declared state did not come about within "
                f"{SETTLE_TIMEOUT:.0f}s: {gaps}"
            )
        time.sleep(POLL)


def wait_for_nodes(api: ApiClient, env: Environment) -> None:
    """Until the node lifecycle controller has each Node's condition taints in step with its
    conditions (it lifts NodeTaint admission's `not-ready` once the node is Ready and its Lease
    renewed): a taint it changed after the before-snapshot would read as a change in the window."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    names = [o.sandbox for o in env.cluster_objects if o.kind == "Node"]
    while True:
        behind = []
        for name in names:
            node = request(api, "GET", resource_path("Node", None, name))
            if condition_taints(node) != implied_taints(node):
                behind.append(env.declared_object_name("Node", name) or name)
        if not behind:
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"{env.scenario_id}: the node lifecycle controller did not bring the taints of "
                f"{', '.join(behind)} in step with their conditions within {SETTLE_TIMEOUT:.0f}s"
            )
        time.sleep(POLL)


def _observe(api: ApiClient, env: Environment, expect: Expectation) -> tuple[Body | None, list[Body]]:
    """The live workload (None for a Pod) and the pods an expectation reads."""
    namespace = env.sandbox_namespace(expect.namespace) or expect.namespace
    if expect.kind == "Pod":
        try:
            return None, [request(api, "GET", resource_path("Pod", namespace, expect.name))]
        except ApiException as exc:
            if exc.status == 404:
                return None, []
            raise
    workload = request(api, "GET", resource_path(expect.kind, namespace, expect.name))
    query = {"labelSelector": f"app={expect.name}"}
    pods: list[Body] = request(api, "GET", resource_path("Pod", namespace), query=query)["items"]
    return workload, pods


def _implied(env: Environment, plan: TwinPlan, expected: list[Expectation]) -> list[Expectation]:
    """Running, for the workloads the twin builds without an entry of their own (a namespace's
    `deployments: [...]`): their status must have caught up with their pods before the snapshot too."""
    covered = {(e.kind, e.namespace, e.name) for e in expected}
    implied = []
    for obj in plan.objects:
        if obj.kind not in ("Deployment", "StatefulSet", "DaemonSet") or obj.namespace is None:
            continue
        declared = env.declared_namespace(obj.namespace) or obj.namespace
        if (obj.kind, declared, obj.name) in covered:
            continue
        spec = obj.body.get("spec") or {}
        replicas = int(spec.get("replicas", 1)) if obj.kind != "DaemonSet" else 0
        implied.append(Expectation(obj.kind, declared, obj.name, "running", replicas))
    return implied
