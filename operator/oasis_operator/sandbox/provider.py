"""The sandbox provider: materialise a scenario's twin in the sandbox cluster, snapshot it, tear it down.

All side effects of the sandbox live here; what to create is decided by the pure builders
(`sandbox.twin`, `sandbox.rbac`). Every object carries the environment label, so teardown and orphan
collection work from the label alone, even without the stored record.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from pydantic import BaseModel, Field

from oasis_operator import API_GROUP
from oasis_operator.kube import MERGE_PATCH, apply_crds, request, resource_path, served_versions
from oasis_operator.models.declared_parse import ParsedState
from oasis_operator.models.environment import AgentServiceAccount, Environment
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox import inventory, teardown
from oasis_operator.sandbox.admission import ensure_default_service_account, node_create_body, status_kept
from oasis_operator.sandbox.argo import ARGO_APPLICATION_CRD
from oasis_operator.sandbox.control import ControlNamespaceError, ensure_control_namespace
from oasis_operator.sandbox.errors import SandboxError as SandboxError  # noqa: PLC0414 (re-exported)
from oasis_operator.sandbox.faults import WorkloadFault, after_pods, fault_stages, faults_of
from oasis_operator.sandbox.inventory import EVALUATION_ANNOTATION, SCENARIO_ANNOTATION
from oasis_operator.sandbox.kwok import apply_stages, ensure_lifecycle
from oasis_operator.sandbox.naming import (
    agent_service_account,
    control_namespace,
    new_environment_id,
)
from oasis_operator.sandbox.observe import (
    ResourceRef,
    Written,
    asserted_resources,
    declared_resources,
    read_snapshot,
)
from oasis_operator.sandbox.rbac import agent_objects
from oasis_operator.sandbox.settle import POLL, SETTLE_TIMEOUT, settle, wait_for_nodes
from oasis_operator.sandbox.snapshot import ResourceSnapshot
from oasis_operator.sandbox.stored_record import record_configmap, record_name, record_text
from oasis_operator.sandbox.teardown import ENV_LABEL as ENV_LABEL  # noqa: PLC0414 (re-exported)
from oasis_operator.sandbox.teardown import TeardownReport as TeardownReport  # noqa: PLC0414 (re-exported)
from oasis_operator.sandbox.twin import TwinObject, TwinPlan, build_twin, parse_twin_state
from oasis_operator.sandbox.twin.plan import Body
from oasis_operator.sandbox.waves import create_in_waves, run_together

log = logging.getLogger(__name__)

ROLE_LABEL = f"{API_GROUP}/sandbox-role"
DECLARED_LABEL = f"{API_GROUP}/declared-namespace"
CREATE_AT_ONCE = 4  # independent objects sent together (namespaces, access, a twin wave: sandbox.waves)
WORKLOAD_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"})


class SandboxRecord(BaseModel):
    """What provisioning produced: the environment, its declared resources and their before-snapshot.

    `parsed`: the scenario's state as parsed at provisioning, for later consumers to take instead of
    parsing it again; not stored (a record read back after a restart has None).
    """

    environment: Environment
    resources: list[ResourceRef]
    before: list[ResourceSnapshot]
    faults: list[WorkloadFault] = []
    parsed: ParsedState | None = Field(default=None, exclude=True)


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class SandboxProvider:
    """Builds and removes scenario environments in one sandbox cluster."""

    def __init__(
        self,
        api: ApiClient,
        prefix: str = "sbx",
        clock: Callable[[], datetime] = _utcnow,
        create_at_once: int = CREATE_AT_ONCE,
    ) -> None:
        self.api = api
        self.prefix = prefix
        self.clock = clock
        self.create_at_once = create_at_once
        self._control_ready: set[str] = set()
        self._world_ready = False

    # --- provisioning ------------------------------------------------------------------------------
    def provision(
        self, scenario: Scenario, evaluation: str | None = None, env_id: str | None = None
    ) -> SandboxRecord:
        """Create the environment; on any failure remove what was created and raise SandboxError."""
        env_id = env_id or new_environment_id()
        now = self.clock()
        parsed = parse_twin_state(scenario)  # the one parse of this provisioning
        plan = build_twin(scenario, env_id, self.prefix, now, parsed)
        agent = scenario.preconditions.agent
        env = Environment(
            id=env_id,
            prefix=self.prefix,
            scenario_id=scenario.id,
            evaluation=evaluation,
            control_namespace=control_namespace(self.prefix),
            namespaces=tuple(plan.namespaces),
            cluster_objects=tuple(plan.cluster_objects),
            agent=AgentServiceAccount(
                namespace=control_namespace(self.prefix), service_account=agent_service_account(env_id)
            ),
            mode=agent.mode,
            tools=tuple(agent.tools),
            fixtures=tuple(plan.fixtures),
            created_at=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            connect=scenario.extension.connect,
        )
        try:
            faults = faults_of(parsed)
            self._create_everything(env, plan, faults)
            settle(self.api, env, plan, parsed, faults)
            resources = declared_resources(plan, env)
            resources += asserted_resources(scenario, resources)
            # Read once the world shows the declared state: the controllers wrote to it since.
            before = read_snapshot(self.api, env, resources)
            record = SandboxRecord(
                environment=env, resources=resources, before=before, faults=faults, parsed=parsed
            )
            self._store_record(record)
        except Exception as exc:
            self._control_ready.clear()  # checked again next time, in case it was the one that went
            try:
                report = self.teardown(env_id, wait=False)
                deleted = len(report.deleted)
                log.warning("provision failed; cleaned up", extra={"env": env_id, "deleted": deleted})
            except Exception:
                # The clean-up failing too (a cluster that stopped answering) must not hide the first error.
                log.exception("provision failed and so did its clean-up", extra={"env": env_id})
            if isinstance(exc, SandboxError):
                raise
            raise SandboxError(f"{scenario.id}: provisioning failed: {exc}") from exc
        return record

    def _create_everything(self, env: Environment, plan: TwinPlan, faults: list[WorkloadFault]) -> Written:
        """Create the environment's namespaces, access, faults and twin; the last answer for each object
        written. A fault's Stage comes before the workload, so no pod of it starts healthy first."""
        written: Written = {}
        create = functools.partial(self._create, written=written)
        labels = {ENV_LABEL: env.id}
        bookkeeping = {SCENARIO_ANNOTATION: env.scenario_id, EVALUATION_ANNOTATION: env.evaluation or ""}
        self._ensure_control_namespace(env.control_namespace)
        uids: dict[tuple[str, str | None, str], str] = {}
        declared = {b.sandbox: b.declared for b in env.namespaces}
        namespaces = [obj for obj in plan.objects if obj.kind == "Namespace"]
        for obj in namespaces:
            meta = obj.body["metadata"]
            meta["labels"] = {
                **meta.get("labels", {}),
                **labels,
                ROLE_LABEL: "declared",
                DECLARED_LABEL: declared[obj.name],
            }
            meta["annotations"] = {**meta.get("annotations", {}), **bookkeeping}
        run_together(
            [functools.partial(create, "Namespace", obj.body) for obj in namespaces],
            self.create_at_once,
        )
        roles: list[Callable[[], object]] = []
        bindings: list[Callable[[], object]] = []
        for kind, body in agent_objects(env):
            if kind in ("ClusterRole", "ClusterRoleBinding", "ServiceAccount"):
                body["metadata"]["labels"] = labels  # found by label at teardown
            if kind == "ServiceAccount":
                body["metadata"]["annotations"] = bookkeeping
            # A binding after its role: without the bind verb, the API server checks the creator holds
            # the role's rights, and a role it cannot find yet refuses the binding (404).
            (bindings if kind.endswith("Binding") else roles).append(functools.partial(create, kind, body))
        # Only where the twin has pods, before them: elsewhere the controller's `default` serves
        # (sandbox.admission).
        with_pods = sorted(
            {obj.namespace for obj in plan.objects if obj.kind in WORKLOAD_KINDS and obj.namespace}
        )
        defaults: list[Callable[[], object]] = [
            functools.partial(ensure_default_service_account, self.api, ns) for ns in with_pods
        ]
        twin = [obj for obj in plan.objects if obj.kind != "Namespace"]

        def agent_access() -> None:
            run_together(roles, self.create_at_once)
            run_together(bindings, self.create_at_once)

        def twin_objects() -> None:
            run_together(defaults, self.create_at_once)
            self._ensure_crds(plan)
            self._ensure_world()
            early = [f for f in faults if not after_pods(f)]
            apply_stages(self.api, [s for f in early for s in fault_stages(env, f, labels)])
            nodes = [obj for obj in twin if obj.kind == "Node"]
            rest = [obj for obj in twin if obj.kind != "Node"]
            create_in_waves(
                nodes,
                lambda obj: self._create_twin_object(obj, labels, uids, written),
                self.create_at_once,
            )

            def create_all(objects: list[TwinObject]) -> None:
                create_in_waves(
                    objects,
                    lambda obj: self._create_twin_object(obj, labels, uids, written),
                    self.create_at_once,
                )

            if not nodes:
                create_all(rest)
                return
            # The nodes as long-registered ones, before any pod is scheduled: otherwise every pod's first
            # scheduling attempt meets NodeTaint admission's `not-ready` taint, and the agent finds a
            # FailedScheduling event on every pod of a healthy cluster. Without workloads too: a taint
            # the controller lifted after the before-snapshot would read as a change in the window. What
            # makes no pods is created meanwhile (the quotas and limit ranges among it stay before the
            # workloads they constrain).
            workloads = [obj for obj in rest if obj.kind in WORKLOAD_KINDS]
            others = [obj for obj in rest if obj.kind not in WORKLOAD_KINDS]
            waiting = functools.partial(wait_for_nodes, self.api, env)
            run_together(
                [waiting, functools.partial(create_all, others)], 2 if self.create_at_once > 1 else 1
            )
            create_all(workloads)

        # The agent's access and the twin admit nothing of each other: they are built side by side.
        run_together([agent_access, twin_objects], 2 if self.create_at_once > 1 else 1)
        return written

    def _create_twin_object(
        self,
        obj: TwinObject,
        labels: dict[str, str],
        uids: dict[tuple[str, str | None, str], str],
        written: Written,
    ) -> None:
        body = obj.body
        meta = body.setdefault("metadata", {})
        if obj.namespace is None:  # cluster-scoped twin objects are found by label at teardown
            meta["labels"] = {**meta.get("labels", {}), **labels}
        if obj.owner is not None:
            owner_kind, owner_name = obj.owner
            api_version = "apps/v1"
            meta["ownerReferences"] = [
                {
                    "apiVersion": api_version,
                    "kind": owner_kind,
                    "name": owner_name,
                    "uid": uids[(owner_kind, obj.namespace, owner_name)],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        api_version = obj.api_version
        body = {"apiVersion": api_version, "kind": obj.kind, **body}
        if obj.kind == "Node":  # created whole, status included (sandbox.admission)
            body = node_create_body(body, obj.status)
        if obj.rollout_from is not None:
            created = self._roll_out(obj, body, written)
        else:
            created = self._create(obj.kind, body, api_version=api_version, written=written)
        uids[obj.key] = created["metadata"]["uid"]
        key = (obj.kind, obj.namespace, obj.name)
        if not status_kept(created, obj.status):
            path = resource_path(obj.kind, obj.namespace, obj.name, api_version=api_version) + "/status"
            written[key] = request(self.api, "PATCH", path, {"status": obj.status}, content_type=MERGE_PATCH)

    def _roll_out(self, obj: TwinObject, body: Body, written: Written) -> Body:
        """A Deployment with history: created with its earlier template (no pods, unless a rollout in
        progress wants them available first), then rolled out to the declared one by the controller."""
        first = copy.deepcopy(body)
        first["spec"]["template"] = obj.rollout_from
        if not obj.available_first:
            first["spec"]["replicas"] = 0
        created = self._create(obj.kind, first, api_version=obj.api_version)
        path = resource_path(obj.kind, obj.namespace, obj.name)
        replicas = int(first["spec"]["replicas"])
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            live: Body = request(self.api, "GET", path)
            status = live.get("status") or {}
            observed = status.get("observedGeneration", 0) >= live["metadata"].get("generation", 1)
            if observed and status.get("availableReplicas", 0) >= (replicas if obj.available_first else 0):
                break
            if time.monotonic() > deadline:
                raise SandboxError(
                    f"deployment {obj.namespace}/{obj.name}: its earlier release was not rolled out "
                    f"within {SETTLE_TIMEOUT:.0f}s (status {status})"
                )
            time.sleep(POLL)
        final = {"spec": {"template": body["spec"]["template"], "replicas": body["spec"]["replicas"]}}
        patched: Body = request(self.api, "PATCH", path, final, content_type=MERGE_PATCH)
        written[obj.key] = patched
        return created

    def _ensure_world(self) -> None:
        """The Stage CRD and the pod lifecycle Stages (`sandbox.kwok`), once per provider."""
        if not self._world_ready:
            ensure_lifecycle(self.api)
            self._world_ready = True

    def _create(
        self, kind: str, body: Body, api_version: str | None = None, written: Written | None = None
    ) -> Body:
        """POST the object; with `written`, keep the server's answer under (kind, namespace, name)."""
        meta = body.get("metadata", {})
        namespace = meta.get("namespace")
        path = resource_path(kind, namespace, api_version=api_version)
        try:
            created: Body = request(self.api, "POST", path, body)
        except ApiException as exc:
            raise SandboxError(
                f"creating {kind} {namespace or ''}/{meta.get('name')} failed ({exc.status}): {exc.body}"
            ) from exc
        if written is not None:
            written[(kind, namespace, created["metadata"]["name"])] = created
        return created

    def _ensure_crds(self, plan: TwinPlan) -> None:
        if any(o.kind == "Application" for o in plan.objects) and not served_versions(
            self.api, "argoproj.io"
        ):
            apply_crds(self.api, [ARGO_APPLICATION_CRD])

    def _ensure_control_namespace(self, name: str) -> None:
        """The shared control namespace, created (and the right to impersonate in it checked) once."""
        if name not in self._control_ready:
            try:
                ensure_control_namespace(self.api, name, {ROLE_LABEL: "control"})
            except ControlNamespaceError as exc:
                raise SandboxError(str(exc)) from exc
            self._control_ready.add(name)

    def _store_record(self, record: SandboxRecord) -> None:
        env = record.environment
        bookkeeping = {SCENARIO_ANNOTATION: env.scenario_id, EVALUATION_ANNOTATION: env.evaluation or ""}
        body = record_configmap(
            env.control_namespace, env.id, {ENV_LABEL: env.id}, record.model_dump_json(), bookkeeping
        )
        self._create("ConfigMap", body)

    def load_record(self, env_id: str) -> SandboxRecord:
        """The stored record of a provisioned environment (e.g. after an operator restart); RecordError
        naming the ConfigMap and key when it cannot be read."""
        ns = control_namespace(self.prefix)
        cm = request(self.api, "GET", resource_path("ConfigMap", ns, record_name(env_id)))
        return SandboxRecord.model_validate_json(record_text(cm))

    # --- observation -------------------------------------------------------------------------------
    def snapshot(self, env: Environment, resources: list[ResourceRef]) -> list[ResourceSnapshot]:
        """The live state of the declared resources and of the derived objects (ReplicaSets, Jobs, Pods) of
        their namespaces."""
        return read_snapshot(self.api, env, resources)

    # --- teardown (sandbox.teardown) ---------------------------------------------------------------
    def teardown(self, env_id: str, wait: bool = True, timeout: float = 120.0) -> TeardownReport:
        """Delete every namespace and cluster-scoped object of the environment; idempotent."""
        return teardown.remove_environment(
            self.api,
            env_id,
            wait,
            timeout,
            finalize=self.finalize_pods,
            control=control_namespace(self.prefix),
        )

    def finalize_pods(self, namespace: str, names: Iterable[str] | None = None) -> None:
        """Delete pods immediately (grace 0), as a kubelet would confirm their shutdown."""
        teardown.finalize_pods(self.api, namespace, names)

    def release_finalizers(self, kind: str, namespace: str | None, name: str) -> None:
        """Drop storage-protection finalizers, whose controllers do not run in the sandbox cluster."""
        teardown.release_finalizers(self.api, kind, namespace, name)

    def _remaining(self, env_id: str) -> list[str]:
        return teardown.remaining(self.api, env_id, control_namespace(self.prefix))

    # --- inventory (sandbox.inventory) ------------------------------------------------------------
    def environments(self) -> list[tuple[str, Body]]:
        """(env id, record ConfigMap) of every environment with a record in the control namespace."""
        return inventory.environments(self.api, self.prefix)

    def environments_of(
        self, evaluation: str, scenario_id: str | None = None, removing: bool = True
    ) -> list[str]:
        """Environment ids with anything left for the evaluation (and scenario); see `inventory`."""
        return inventory.environments_of(self.api, self.prefix, evaluation, scenario_id, removing)

    def collect_orphans(
        self, is_live: Callable[[str], bool], max_age: timedelta = inventory.ORPHAN_AGE
    ) -> list[TeardownReport]:
        """Tear down environments whose evaluation is gone (or, with none recorded, older than max_age)."""
        found = inventory.environment_objects(self.api, self.prefix)
        return [
            self.teardown(env_id, wait=False)
            for env_id in inventory.orphans(found, self.prefix, is_live, self.clock(), max_age)
        ]
