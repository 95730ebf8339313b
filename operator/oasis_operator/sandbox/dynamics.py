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

import logging
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.faults import LiveView, WorkloadFault, current_state
from oasis_operator.sandbox.pod_dynamics import PodDynamics, pod_state
from oasis_operator.sandbox.provider import MERGE_PATCH, SandboxProvider, SandboxRecord
from oasis_operator.sandbox.twin.plan import Body, TwinContext
from oasis_operator.sandbox.workload_status import (
    MAX_TWIN_PODS,
    REVISION,
    SCALED_DOWN_STATUS,
    deployment_status,
    owned_by,
    ready_replicas,
    replica_set_for,
    replica_set_status,
    revision_of,
    template_key,
)

log = logging.getLogger(__name__)


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
        self.pods = PodDynamics(provider, record.environment)
        # The change mark (see `settle`) at which a pass last found nothing to do; a fresh twin is as
        # its controllers would leave it, so it starts settled at mark 0.
        self._settled_at: int | None = 0

    def settle(self, mark: int | None) -> list[str]:
        """`reconcile_once`, unless nothing can have changed since a pass last found nothing to do.

        `mark` counts what may have changed the sandbox so far (the gateway's record of the agent's
        writes and of the stimuli that fired; None when a write is still unanswered). A pass is a pure
        function of the sandbox's state, so with the mark where it was when a pass changed nothing, this
        pass would change nothing too and is skipped.
        """
        if mark is not None and mark == self._settled_at:
            return []
        actions = self.reconcile_once()
        self._settled_at = mark if not actions else None
        return actions

    def _ctx(self) -> TwinContext:
        nodes = tuple(o.sandbox for o in self.env.cluster_objects if o.kind == "Node")
        mapping = {b.declared: b.sandbox for b in self.env.namespaces}
        now = self.provider.clock().astimezone(UTC)
        return TwinContext(self.env.scenario_id, self.env.id, self.env.prefix, now, mapping, nodes)

    def reconcile_once(self) -> list[str]:
        """One pass over every namespace of the environment; returns what it changed."""
        actions: list[str] = []
        ctx = self._ctx()
        self.pods.new_pass()
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
        owned = [rs for rs in all_rs if owned_by(rs, uid)]
        newest = max((revision_of(rs) for rs in owned), default=0)
        initial = self._initial_revision.setdefault((ns, name), newest)
        template = dep["spec"]["template"]
        matching = next(
            (rs for rs in owned if template_key(rs["spec"]["template"]) == template_key(template)), None
        )
        spec_changed = dep["metadata"].get("generation") != (dep.get("status") or {}).get(
            "observedGeneration"
        )
        actions: list[str] = []
        if not spec_changed and matching is not None:
            # Nothing the agent asked of the Deployment itself: replace deleted pods, apply cures.
            current = matching
            desired = int(current["spec"].get("replicas", 0))
            restarted = revision_of(current) > initial
            state = self._state(declared_ns, name, template, restarted, ns)
            mine = [p for p in pods if owned_by(p, current["metadata"]["uid"])]
            curable = (declared_ns, name) in self.faults and state == "running"
            cured = curable and any(pod_state(p) != "running" for p in mine)
            unbound = state != "pending" and any(not p["spec"].get("nodeName") for p in mine)
            if len(mine) >= min(desired, MAX_TWIN_PODS) and not cured and not unbound:
                return []
            done, waiting = self.pods.scale(ctx, declared_ns, current, mine, desired, state)
            replicas = int(dep["spec"].get("replicas", 1))
            return actions + done + self._write_statuses(dep, current, replicas, state, waiting)
        if matching is None or revision_of(matching) < newest:
            current = self._adopt_or_create(dep, matching, newest + 1)
            actions.append(
                f"rolled out {declared_ns}/{name} revision {current['metadata']['annotations'][REVISION]}"
            )
        else:
            current = matching
        restarted = revision_of(current) > initial
        state = self._state(declared_ns, name, template, restarted, ns)
        desired = int(dep["spec"].get("replicas", 1))
        waiting = 0
        for rs in [*(r for r in owned if r["metadata"]["uid"] != current["metadata"]["uid"]), current]:
            is_current = rs["metadata"]["uid"] == current["metadata"]["uid"]
            rs_pods = [p for p in pods if owned_by(p, rs["metadata"]["uid"])]
            want = desired if is_current else 0
            done, waiting = self.pods.scale(ctx, declared_ns, rs, rs_pods, want, state)
            actions += done
            if not is_current and int(rs["spec"].get("replicas", 0)):
                path = resource_path("ReplicaSet", ns, rs["metadata"]["name"])
                request(self.api, "PATCH", path, {"spec": {"replicas": 0}}, content_type=MERGE_PATCH)
                scaled_down = {"status": dict(SCALED_DOWN_STATUS)}
                request(self.api, "PATCH", path + "/status", scaled_down, content_type=MERGE_PATCH)
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
        ns = dep["metadata"]["namespace"]
        if existing is not None:  # a rollback to an earlier template: that ReplicaSet becomes the newest
            patch = {"metadata": {"annotations": {REVISION: str(revision)}}}
            path = resource_path("ReplicaSet", ns, existing["metadata"]["name"])
            updated: Body = request(self.api, "PATCH", path, patch, content_type=MERGE_PATCH)
            return updated
        body = replica_set_for(dep, revision)
        created: Body = request(self.api, "POST", resource_path("ReplicaSet", ns), body)
        return created

    def _write_statuses(
        self, dep: Body, current: Body, desired: int, state: str, waiting: int = 0
    ) -> list[str]:
        """Status of the Deployment and its current ReplicaSet; `waiting` pods have no node yet."""
        ns = dep["metadata"]["namespace"]
        ready = ready_replicas(desired, state, waiting)
        path = resource_path("ReplicaSet", ns, current["metadata"]["name"]) + "/status"
        rs_status = replica_set_status(current, desired, ready)
        request(self.api, "PATCH", path, {"status": rs_status}, content_type=MERGE_PATCH)
        status = deployment_status(dep, desired, ready, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if status is None:
            return []
        path = resource_path("Deployment", ns, dep["metadata"]["name"]) + "/status"
        request(self.api, "PATCH", path, {"status": status}, content_type=MERGE_PATCH)
        return [f"updated status of deployment {dep['metadata']['name']}"]
