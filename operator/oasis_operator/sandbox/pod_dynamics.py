"""One ReplicaSet's pods as the ReplicaSet controller, the scheduler and the kubelet would keep them.

The twin dynamics (`sandbox.dynamics`) decide how many pods a ReplicaSet should have and in which health
state; `PodDynamics` removes the extra ones, creates the missing ones on a node that fits
(`sandbox.scheduling`), binds those that waited for a node once one fits, and writes each pod's status.
"""

from __future__ import annotations

import copy
from collections import Counter
from datetime import timedelta

from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.models.environment import Environment
from oasis_operator.sandbox.naming import pod_suffix
from oasis_operator.sandbox.provider import MERGE_PATCH, SandboxProvider
from oasis_operator.sandbox.scheduling import place
from oasis_operator.sandbox.twin.plan import Body, TwinContext
from oasis_operator.sandbox.twin.pods import PodHealth, pod_status
from oasis_operator.sandbox.twin.workloads import health_for
from oasis_operator.sandbox.workload_status import MAX_TWIN_PODS


def pod_state(pod: Body) -> str:
    """`running` when the pod reports Ready, else `unhealthy`."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
    return "running" if ready else "unhealthy"


class PodDynamics:
    """Creates, removes, binds and heals the pods of one environment's ReplicaSets."""

    def __init__(self, provider: SandboxProvider, env: Environment) -> None:
        self.provider = provider
        self.api = provider.api
        self.env = env
        self._pod_counter = 0
        self._nodes: list[Body] | None = None  # the live Nodes, read once per pass when a pod is placed

    def new_pass(self) -> None:
        """Forget the Nodes read in the last pass: the agent may have cordoned or tainted one since."""
        self._nodes = None

    def _live_nodes(self) -> list[Body]:
        """The environment's Nodes as they are now (conditions, taints, cordons), in declaration order."""
        if self._nodes is None:
            self._nodes = []
            for binding in self.env.cluster_objects:
                if binding.kind != "Node":
                    continue
                try:
                    self._nodes.append(request(self.api, "GET", resource_path("Node", None, binding.sandbox)))
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        return self._nodes

    def scale(
        self, ctx: TwinContext, declared_ns: str, rs: Body, pods: list[Body], want: int, state: str
    ) -> tuple[list[str], int]:
        """Bring the ReplicaSet's pods to `want`; also how many of them wait for a node."""
        ns = rs["metadata"]["namespace"]
        actions = []
        want = min(want, MAX_TWIN_PODS)
        extra = sorted(p["metadata"]["name"] for p in pods)[want:]
        if extra:
            self.provider.finalize_pods(ns, extra)
            actions += [f"removed pod {declared_ns}/{n}" for n in extra]
        kept = [p for p in pods if p["metadata"]["name"] not in extra]
        occupancy = Counter(str(p["spec"]["nodeName"]) for p in kept if p["spec"].get("nodeName"))
        waiting = 0
        for index, pod in enumerate(kept):
            if state != "pending" and not pod["spec"].get("nodeName"):  # left Pending for lack of a node
                bound = self._bind(ctx, declared_ns, pod, (state, len(kept), index), occupancy)
                actions += bound
                waiting += 0 if bound else 1
            elif pod_state(pod) != state and state == "running":  # a cure reaches running pods too
                self._patch_status(ctx, pod, state, len(kept))
                actions.append(f"recovered pod {declared_ns}/{pod['metadata']['name']}")
        for i in range(len(kept), want):
            done, unschedulable = self._create(ctx, declared_ns, rs, (state, want, i), occupancy)
            waiting += 1 if unschedulable else 0
            actions.append(done)
        return actions, waiting

    def _create(
        self,
        ctx: TwinContext,
        declared_ns: str,
        rs: Body,
        health: tuple[str, int, int],
        occupancy: Counter[str],
    ) -> tuple[str, bool]:
        """Create the `index`th pod of the ReplicaSet; what it did, and whether the pod waits for a node."""
        state, want, index = health
        ns, rs_name = rs["metadata"]["namespace"], rs["metadata"]["name"]
        self._pod_counter += 1
        pod_name = f"{rs_name}-{pod_suffix(f'{ctx.env_id}/{rs_name}/{index}/{self._pod_counter}')}"
        spec = copy.deepcopy(rs["spec"]["template"]["spec"])
        unschedulable = None
        if state != "pending":
            node, unschedulable = place(spec, self._live_nodes(), index + self._pod_counter, occupancy)
            if node is not None:
                spec["nodeName"] = node
                occupancy[node] += 1
        owner = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs_name,
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        body = {
            "metadata": {
                "name": pod_name,
                "namespace": ns,
                "labels": rs["spec"]["template"]["metadata"]["labels"],
                "ownerReferences": [owner],
            },
            "spec": spec,
        }
        request(self.api, "POST", resource_path("Pod", ns), body)
        self._patch_status(ctx, body, state, want, index=index, unschedulable=unschedulable or None)
        if unschedulable:
            return f"created pod {declared_ns}/{pod_name} (pending: {unschedulable})", True
        return f"created pod {declared_ns}/{pod_name} ({state})", False

    def _bind(
        self,
        ctx: TwinContext,
        declared_ns: str,
        pod: Body,
        health: tuple[str, int, int],
        occupancy: Counter[str],
    ) -> list[str]:
        """Bind a pod that waited for a node to one that fits now, as the scheduler would."""
        state, replicas, index = health
        spec = pod["spec"]
        node, _ = place(spec, self._live_nodes(), index + self._pod_counter, occupancy)
        if node is None:
            return []
        occupancy[node] += 1
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        request(self.api, "POST", resource_path("Pod", ns, name) + "/binding", binding)
        bound = {**pod, "spec": {**spec, "nodeName": node}}
        self._patch_status(ctx, bound, state, replicas, index=index)
        return [f"scheduled pod {declared_ns}/{name} on {self.env.declared_object_name('Node', node)}"]

    def _patch_status(
        self,
        ctx: TwinContext,
        pod: Body,
        state: str,
        replicas: int,
        index: int = 0,
        unschedulable: str | None = None,
    ) -> None:
        health = health_for(state, index, replicas)
        if unschedulable is not None:
            health = PodHealth("pending", ready=False, reason=unschedulable)
        node = pod["spec"].get("nodeName")
        status = pod_status(ctx, pod["metadata"]["name"], pod["spec"], health, node, timedelta(seconds=5))
        path = resource_path("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"]) + "/status"
        request(self.api, "PATCH", path, {"status": status}, content_type=MERGE_PATCH)
