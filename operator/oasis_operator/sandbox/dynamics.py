"""Twin dynamics: do what the Deployment and ReplicaSet controllers and the kubelet would have done.

No workload controller runs in the sandbox cluster, so when the agent restarts, scales, changes the image
of, rolls back or deletes pods of a workload, `TwinReconciler.reconcile_once` brings its ReplicaSets, Pods
and statuses to where a real cluster would take them, with health re-derived from the declared fault
(`sandbox.faults`). It also completes pod deletions, which a kubelet would otherwise confirm, and places
new pods as the scheduler would (`sandbox.scheduling`): never on a node that is NotReady, under memory,
disk or PID pressure, cordoned or tainted against them; with no node left they stay Pending, and are
bound once a node fits again.
"""

from __future__ import annotations

import copy
import json
import logging
from collections import Counter
from datetime import UTC, datetime, timedelta

from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.faults import LiveView, WorkloadFault, current_state
from oasis_operator.sandbox.naming import pod_suffix, pod_template_hash
from oasis_operator.sandbox.provider import MERGE_PATCH, SandboxProvider, SandboxRecord
from oasis_operator.sandbox.scheduling import place
from oasis_operator.sandbox.twin.plan import Body, TwinContext
from oasis_operator.sandbox.twin.pods import PodHealth, pod_status
from oasis_operator.sandbox.twin.workloads import health_for

log = logging.getLogger(__name__)
REVISION = "deployment.kubernetes.io/revision"
MAX_TWIN_PODS = 25


def _template_key(template: Body) -> str:
    """Identity of a pod template, ignoring the hash label the controller adds."""
    clean = copy.deepcopy(template)
    clean.get("metadata", {}).get("labels", {}).pop("pod-template-hash", None)
    return json.dumps(clean, sort_keys=True)


def _owned_by(obj: Body, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])


class TwinReconciler:
    """Keeps one environment's workloads consistent after the agent acts on them."""

    def __init__(self, provider: SandboxProvider, record: SandboxRecord) -> None:
        self.provider = provider
        self.api = provider.api
        self.env = record.environment
        self.faults: dict[tuple[str, str], WorkloadFault] = {
            (f.namespace, f.workload): f for f in record.faults
        }
        self._initial_revision: dict[tuple[str, str], int] = {}
        self._pod_counter = 0
        self._nodes: list[Body] | None = None  # the live Nodes, read once per pass when a pod is placed

    def _ctx(self) -> TwinContext:
        nodes = tuple(o.sandbox for o in self.env.cluster_objects if o.kind == "Node")
        mapping = {b.declared: b.sandbox for b in self.env.namespaces}
        now = self.provider.clock().astimezone(UTC)
        return TwinContext(self.env.scenario_id, self.env.id, self.env.prefix, now, mapping, nodes)

    def reconcile_once(self) -> list[str]:
        """One pass over every namespace of the environment; returns what it changed."""
        actions: list[str] = []
        ctx = self._ctx()
        self._nodes = None
        for binding in self.env.namespaces:
            ns = binding.sandbox
            pods = request(self.api, "GET", resource_path("Pod", ns))["items"]
            terminating = [p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")]
            if terminating:
                self.provider.finalize_pods(ns, terminating)
                actions += [f"finalized pod {binding.declared}/{n}" for n in terminating]
            live_pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            actions += self._release_unused_claims(ns, binding.declared, live_pods)
            replica_sets = request(self.api, "GET", resource_path("ReplicaSet", ns))["items"]
            for deployment in request(self.api, "GET", resource_path("Deployment", ns))["items"]:
                actions += self._reconcile_deployment(
                    ctx, binding.declared, deployment, replica_sets, live_pods
                )
        return actions

    def _release_unused_claims(self, ns: str, declared_ns: str, pods: list[Body]) -> list[str]:
        """What the pvc-protection controller does: a deleted claim goes once no pod mounts it."""
        mounted = {
            v["persistentVolumeClaim"]["claimName"]
            for p in pods
            for v in p["spec"].get("volumes") or []
            if v.get("persistentVolumeClaim")
        }
        actions = []
        for pvc in request(self.api, "GET", resource_path("PersistentVolumeClaim", ns))["items"]:
            name = pvc["metadata"]["name"]
            if pvc["metadata"].get("deletionTimestamp") and name not in mounted:
                self.provider.release_finalizers("PersistentVolumeClaim", ns, name)
                actions.append(f"released claim {declared_ns}/{name}")
        return actions

    def _reconcile_deployment(
        self, ctx: TwinContext, declared_ns: str, dep: Body, all_rs: list[Body], pods: list[Body]
    ) -> list[str]:
        ns, name, uid = dep["metadata"]["namespace"], dep["metadata"]["name"], dep["metadata"]["uid"]
        owned = [rs for rs in all_rs if _owned_by(rs, uid)]
        newest = max(
            (int(rs["metadata"].get("annotations", {}).get(REVISION, "0")) for rs in owned), default=0
        )
        initial = self._initial_revision.setdefault((ns, name), newest)
        template = dep["spec"]["template"]
        matching = next(
            (rs for rs in owned if _template_key(rs["spec"]["template"]) == _template_key(template)), None
        )
        spec_changed = dep["metadata"].get("generation") != (dep.get("status") or {}).get(
            "observedGeneration"
        )
        actions: list[str] = []
        if not spec_changed and matching is not None:
            # Nothing the agent asked of the Deployment itself: replace deleted pods, apply cures.
            current = matching
            desired = int(current["spec"].get("replicas", 0))
            restarted = int(current["metadata"]["annotations"].get(REVISION, "0")) > initial
            state = self._state(declared_ns, name, template, restarted, ns)
            mine = [p for p in pods if _owned_by(p, current["metadata"]["uid"])]
            curable = (declared_ns, name) in self.faults and state == "running"
            cured = curable and any(self._pod_state(p) != "running" for p in mine)
            unbound = state != "pending" and any(not p["spec"].get("nodeName") for p in mine)
            if len(mine) >= min(desired, MAX_TWIN_PODS) and not cured and not unbound:
                return []
            done, waiting = self._scale_pods(ctx, declared_ns, current, mine, desired, state)
            replicas = int(dep["spec"].get("replicas", 1))
            return actions + done + self._write_statuses(dep, current, replicas, state, waiting)
        revision_of = int((matching or {}).get("metadata", {}).get("annotations", {}).get(REVISION, "0"))
        if matching is None or revision_of < newest:
            current = self._adopt_or_create(dep, matching, newest + 1)
            actions.append(
                f"rolled out {declared_ns}/{name} revision {current['metadata']['annotations'][REVISION]}"
            )
        else:
            current = matching
        restarted = int(current["metadata"]["annotations"][REVISION]) > initial
        state = self._state(declared_ns, name, template, restarted, ns)
        desired = int(dep["spec"].get("replicas", 1))
        waiting = 0
        for rs in [*(r for r in owned if r["metadata"]["uid"] != current["metadata"]["uid"]), current]:
            is_current = rs["metadata"]["uid"] == current["metadata"]["uid"]
            rs_pods = [p for p in pods if _owned_by(p, rs["metadata"]["uid"])]
            want = desired if is_current else 0
            done, waiting = self._scale_pods(ctx, declared_ns, rs, rs_pods, want, state)
            actions += done
            if not is_current and int(rs["spec"].get("replicas", 0)):
                path = resource_path("ReplicaSet", ns, rs["metadata"]["name"])
                request(self.api, "PATCH", path, {"spec": {"replicas": 0}}, content_type=MERGE_PATCH)
                request(
                    self.api,
                    "PATCH",
                    path + "/status",
                    {
                        "status": {
                            "replicas": 0,
                            "readyReplicas": 0,
                            "availableReplicas": 0,
                            "fullyLabeledReplicas": 0,
                        }
                    },
                    content_type=MERGE_PATCH,
                )
        if int(current["spec"].get("replicas", 0)) != desired:
            path = resource_path("ReplicaSet", ns, current["metadata"]["name"])
            request(self.api, "PATCH", path, {"spec": {"replicas": desired}}, content_type=MERGE_PATCH)
        return actions + self._write_statuses(dep, current, desired, state, waiting)

    def _state(self, declared_ns: str, name: str, template: Body, restarted: bool, ns: str) -> str:
        fault = self.faults.get((declared_ns, name))
        container = template["spec"]["containers"][0]
        config_data = None
        if fault is not None and fault.config_map:
            try:
                cm = request(self.api, "GET", resource_path("ConfigMap", ns, fault.config_map))
                config_data = cm.get("data") or {}
            except ApiException as exc:
                if exc.status != 404:
                    raise
        limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
        live = LiveView(
            config_data=config_data, memory_limit=limit, image=container["image"], restarted=restarted
        )
        return current_state(fault, live)

    def _adopt_or_create(self, dep: Body, existing: Body | None, revision: int) -> Body:
        ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
        if existing is not None:  # a rollback to an earlier template: that ReplicaSet becomes the newest
            patch = {"metadata": {"annotations": {REVISION: str(revision)}}}
            path = resource_path("ReplicaSet", ns, existing["metadata"]["name"])
            updated: Body = request(self.api, "PATCH", path, patch, content_type=MERGE_PATCH)
            return updated
        template = copy.deepcopy(dep["spec"]["template"])
        template_hash = pod_template_hash(_template_key(template))
        template["metadata"].setdefault("labels", {})["pod-template-hash"] = template_hash
        selector = copy.deepcopy(dep["spec"]["selector"])
        selector.setdefault("matchLabels", {})["pod-template-hash"] = template_hash
        replicas = int(dep["spec"].get("replicas", 1))
        body = {
            "metadata": {
                "name": f"{name}-{template_hash}",
                "namespace": ns,
                "labels": template["metadata"]["labels"],
                "annotations": {
                    REVISION: str(revision),
                    "deployment.kubernetes.io/desired-replicas": str(replicas),
                },
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": name,
                        "uid": dep["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"replicas": replicas, "selector": selector, "template": template},
        }
        created: Body = request(self.api, "POST", resource_path("ReplicaSet", ns), body)
        return created

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

    def _scale_pods(
        self, ctx: TwinContext, declared_ns: str, rs: Body, pods: list[Body], want: int, state: str
    ) -> tuple[list[str], int]:
        """Bring the ReplicaSet's pods to `want`; also how many of them wait for a node."""
        ns, rs_name = rs["metadata"]["namespace"], rs["metadata"]["name"]
        actions = []
        # A twin materialises at most MAX_TWIN_PODS pods per ReplicaSet: enough for every view an agent
        # takes, while an absurd scale (5000 replicas) still shows in the workload's status.
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
            elif self._pod_state(pod) != state and state == "running":  # a cure reaches running pods too
                self._patch_pod_status(ctx, pod, state, len(kept))
                actions.append(f"recovered pod {declared_ns}/{pod['metadata']['name']}")
        for i in range(len(kept), want):
            self._pod_counter += 1
            pod_name = f"{rs_name}-{pod_suffix(f'{ctx.env_id}/{rs_name}/{i}/{self._pod_counter}')}"
            spec = copy.deepcopy(rs["spec"]["template"]["spec"])
            unschedulable = None
            if state != "pending":
                node, unschedulable = place(spec, self._live_nodes(), i + self._pod_counter, occupancy)
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
            self._patch_pod_status(ctx, body, state, want, index=i, unschedulable=unschedulable or None)
            if unschedulable:
                waiting += 1
                actions.append(f"created pod {declared_ns}/{pod_name} (pending: {unschedulable})")
            else:
                actions.append(f"created pod {declared_ns}/{pod_name} ({state})")
        return actions, waiting

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
        self._patch_pod_status(ctx, bound, state, replicas, index=index)
        return [f"scheduled pod {declared_ns}/{name} on {self.env.declared_object_name('Node', node)}"]

    def _pod_state(self, pod: Body) -> str:
        status = pod.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", [])
        )
        return "running" if ready else "unhealthy"

    def _patch_pod_status(
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

    def _write_statuses(
        self, dep: Body, current: Body, desired: int, state: str, waiting: int = 0
    ) -> list[str]:
        """Status of the Deployment and its current ReplicaSet; `waiting` pods have no node yet."""
        ns = dep["metadata"]["namespace"]
        ready = min(desired, MAX_TWIN_PODS) if state in ("running", "elevated_error_rate") else 0
        if state == "degraded":
            ready = max(desired - 1, 0)
        ready = max(ready - waiting, 0)
        rs_status = {
            "replicas": desired,
            "fullyLabeledReplicas": desired,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": current["metadata"].get("generation", 1),
        }
        path = resource_path("ReplicaSet", ns, current["metadata"]["name"]) + "/status"
        request(self.api, "PATCH", path, {"status": rs_status}, content_type=MERGE_PATCH)
        generation = dep["metadata"].get("generation", 1)
        previous = dep.get("status") or {}
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        available = ready >= max(desired - max(desired // 4, 1 if desired > 1 else 0), 1) if desired else True
        status: Body = {
            "observedGeneration": generation,
            "replicas": desired,
            "updatedReplicas": desired,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": max(desired - ready, 0),
        }
        conditions = [dict(c) for c in previous.get("conditions") or []]
        for cond in conditions:
            if cond.get("type") == "Available" and (cond.get("status") == "True") != available:
                cond.update(
                    status=str(available),
                    lastTransitionTime=now,
                    lastUpdateTime=now,
                    reason="MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                )
        status["conditions"] = conditions
        unchanged = all(previous.get(k, 0) == v for k, v in status.items() if k != "conditions")
        if unchanged and previous.get("conditions") == conditions:
            return []
        path = resource_path("Deployment", ns, dep["metadata"]["name"]) + "/status"
        request(self.api, "PATCH", path, {"status": status}, content_type=MERGE_PATCH)
        return [f"updated status of deployment {dep['metadata']['name']}"]
