"""Turn a scenario's declared state into a TwinPlan (pure: same scenario, env id and time → same plan)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from oasis_operator.models.declared_parse import (
    DeclaredStateError,
    ParsedState,
    parse_declared,
    split_resource,
)
from oasis_operator.models.declared_state import (
    DEPLOYMENT_FIXTURE_KEYS,
    ConfigMapState,
    DeclaredKind,
    DeploymentState,
    EventsState,
    GitOpsApplicationState,
    HpaState,
    IngressState,
    NamespaceState,
    NetworkPolicyState,
    NodesState,
    NodeState,
    PdbState,
    PodStateEntry,
    PvcState,
    RoleBindingState,
    RoleState,
    SecretState,
    ServiceAccountState,
    ServiceState,
)
from oasis_operator.models.declared_values import POD_SET_KINDS, RESERVED_NAMESPACES
from oasis_operator.models.environment import ClusterObjectBinding, FixtureEntry, NamespaceBinding
from oasis_operator.models.scenario import Scenario, StateEntry
from oasis_operator.sandbox.naming import is_dns_label, sandbox_name
from oasis_operator.sandbox.twin import controllers, infra
from oasis_operator.sandbox.twin import resources as res
from oasis_operator.sandbox.twin.infra import DeclaredNode
from oasis_operator.sandbox.twin.plan import TwinContext, TwinError, TwinObject, TwinPlan
from oasis_operator.sandbox.twin.sidecars import sidecars_by_workload
from oasis_operator.sandbox.twin.workloads import deployment_objects, standalone_pod

DEFAULT_NODE_COUNT = 3
Declared = list[tuple[StateEntry, DeclaredKind]]


def _split(entry: StateEntry) -> tuple[str, str]:
    return split_resource(entry.resource)


def parse_twin_state(scenario: Scenario) -> ParsedState:
    """Every entry with its kind's model (once per provisioning: the value is passed on, never parsed
    again); a TwinError naming the first bad entry and its field otherwise.

    The rules live in the models (`models/declared_parse.py`): the Scenario's validation refuses the
    same entries with the same words, so a valid Scenario never fails here.
    """
    try:
        return parse_declared(scenario.preconditions.environment.state)
    except DeclaredStateError as exc:
        first = exc.problems[0]
        same = [p for p in exc.problems if p.index == first.index]
        problem = "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in same)
        raise TwinError(scenario.id, first.index, first.resource, problem) from exc


def _merged(old: NamespaceState, new: NamespaceState) -> NamespaceState:
    """Two entries for one namespace read as one (the later one's keys win)."""
    given = {**old.model_dump(exclude_unset=True), **new.model_dump(exclude_unset=True)}
    return NamespaceState.model_validate(given)


def _namespaces(scenario: Scenario, declared: Declared) -> list[tuple[str, NamespaceState]]:
    found: dict[str, NamespaceState] = {"default": NamespaceState()}
    for entry, model in declared:
        name = _split(entry)[1]
        if isinstance(model, NamespaceState):
            found[name] = _merged(found[name], model) if name in found else model
        elif entry.namespace:
            found.setdefault(entry.namespace, NamespaceState())
    scope = scenario.preconditions.agent.scope
    for ns in scope.namespaces if scope else []:
        found.setdefault(ns, NamespaceState())
    return sorted(found.items())


def build_twin(
    scenario: Scenario, env_id: str, prefix: str, now: datetime, parsed: ParsedState | None = None
) -> TwinPlan:
    """The whole twin for one scenario; raises TwinError naming the entry that cannot be built.

    `parsed`: the scenario's state as parsed at provisioning (`parse_twin_state`); parsed here if None.
    """
    sid = scenario.id
    declared = list((parsed if parsed is not None else parse_twin_state(scenario)).entries)
    scope = scenario.preconditions.agent.scope
    in_scope = set(scope.namespaces) if scope else set()
    namespaces = _namespaces(scenario, declared)
    bindings = []
    for name, ns_entry in namespaces:
        if name in RESERVED_NAMESPACES or not is_dns_label(name):  # a scope may still name one
            raise TwinError(sid, None, f"namespace/{name}", "reserved or not a valid namespace name")
        bindings.append(
            NamespaceBinding(
                declared=name,
                sandbox=sandbox_name(prefix, env_id, name),
                zone=ns_entry.zone,
                in_scope=name in in_scope,
            )
        )
    plan = TwinPlan(namespaces=bindings)
    for (name, ns_entry), binding in zip(namespaces, bindings, strict=True):
        plan.objects.append(res.namespace(binding.sandbox, name, ns_entry, env_id))
    nodes = _node_entries(declared)
    node_names = tuple(sandbox_name(prefix, env_id, n.name) for n in nodes)
    mapping = {b.declared: b.sandbox for b in bindings}
    ctx = TwinContext(sid, env_id, prefix, now, mapping, node_names, sidecars_by_workload(scenario))
    for index, (node, sandbox) in enumerate(zip(nodes, node_names, strict=True)):
        plan.objects.append(infra.node(ctx, sandbox, index, node))
        plan.cluster_objects.append(ClusterObjectBinding(kind="Node", declared=node.name, sandbox=sandbox))
        usage = infra.node_usage_percent(node)
        if usage is not None:
            plan.fixtures.append(FixtureEntry(kind="node-usage", name=node.name, data={"cpu_percent": usage}))
    for name, ns_entry in namespaces:
        _namespace_extras(ctx, plan, name, ns_entry)

    entries = list(enumerate(declared))
    for index, (entry, model) in sorted(entries, key=lambda ie: _ORDER.get(_split(ie[1][0])[0], 50)):
        if isinstance(model, NamespaceState | NodesState | NodeState):
            continue
        try:
            _build_entry(ctx, plan, entry, model)
        except (ValueError, KeyError, TypeError) as exc:
            raise TwinError(sid, index, entry.resource, str(exc)) from exc
    return plan


_ORDER = {
    "configmap": 0,
    "secret": 0,
    "pvc": 1,
    "deployment": 2,
    "pod": 3,
    "service": 4,
    "ingress": 5,
    "hpa": 6,
}


def _node_entries(declared: Declared) -> list[DeclaredNode]:
    nodes: dict[str, NodeState] = {}
    pool = NodesState()
    count: int | None = None
    for entry, model in declared:
        if isinstance(model, NodesState):
            pool = model
            count = model.count if model.count is not None else DEFAULT_NODE_COUNT
        elif isinstance(model, NodeState):
            nodes[_split(entry)[1]] = model
    if count is None:  # no pool declared: the nodes named, or the default pool
        count = 0 if nodes else DEFAULT_NODE_COUNT
    for i in range(1, count + 1):
        nodes.setdefault(f"node-{i}", NodeState())
    return [DeclaredNode(name, pool, own) for name, own in sorted(nodes.items())]


def _namespace_extras(ctx: TwinContext, plan: TwinPlan, declared: str, entry: NamespaceState) -> None:
    # Quotas before the workloads, which admission then measures against them; a quota on compute
    # comes with the container defaults a platform sets beside it, or no pod without its own requests
    # and limits would be admitted.
    if entry.resource_quotas:
        plan.objects.append(infra.container_defaults(ctx, declared))
    for name in entry.resource_quotas or []:
        plan.objects.append(infra.resource_quota(ctx, str(name), declared))
    for name in entry.deployments or []:
        plan.objects.extend(
            deployment_objects(ctx, name, declared, DeploymentState(status="running", replicas=1))
        )


def _build_entry(ctx: TwinContext, plan: TwinPlan, entry: StateEntry, model: DeclaredKind) -> None:
    kind, name = _split(entry)
    namespace = model.namespace or "default"
    if model.served:
        # Kept with the environment for the gateway's APIs: the entry as written, less its namespace.
        data = model.model_dump(exclude_unset=True, exclude={"namespace"})
        plan.fixtures.append(FixtureEntry(kind=kind, name=name, namespace=entry.namespace, data=data))
        return
    builder = _BUILDERS[type(model)]
    builder(ctx, plan, name, namespace, model)


def _deployment(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: DeploymentState) -> None:
    objects = deployment_objects(ctx, name, namespace, entry)
    plan.objects.extend(objects)
    signals = entry.model_dump(include=set(DEPLOYMENT_FIXTURE_KEYS), exclude_unset=True)
    if signals:
        plan.fixtures.append(
            FixtureEntry(kind="workload-signals", name=name, namespace=namespace, data=signals)
        )
    for container in entry.init_containers or []:
        if container.logs:
            plan.fixtures.append(
                FixtureEntry(
                    kind="logs",
                    name=name,
                    namespace=namespace,
                    data={"container": container.name, "entries": [container.logs]},
                )
            )


def _pod(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: PodStateEntry) -> None:
    pod = standalone_pod(ctx, name, namespace, entry)
    plan.objects.append(pod)
    if entry.last_log:
        plan.fixtures.append(
            FixtureEntry(
                kind="logs",
                name=name,
                namespace=namespace,
                data={"entries": [entry.last_log], "pod": True},
            )
        )
    if entry.cpu_usage is not None:
        plan.fixtures.append(
            FixtureEntry(
                kind="workload-signals",
                name=name,
                namespace=namespace,
                data={"cpu_usage": entry.cpu_usage, "pod": True},
            )
        )


def _service(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: ServiceState) -> None:
    plan.objects.append(res.service(ctx, name, namespace, entry))


def _ingress(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: IngressState) -> None:
    # Without a backend the namespace has exactly one Service (a declared-state rule): that one.
    backend = entry.backend or next(
        o.name for o in plan.objects if o.kind == "Service" and o.namespace == ctx.ns(namespace)
    )
    plan.objects.append(res.ingress(ctx, name, namespace, entry, backend))
    if entry.status:
        plan.fixtures.append(
            FixtureEntry(
                kind="ingress-status",
                name=name,
                namespace=namespace,
                data={"status": entry.status, "backend": backend},
            )
        )


def _hpa(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: HpaState) -> None:
    kind, _, target = (entry.target or "").partition("/")
    deployment = plan.find(POD_SET_KINDS[kind], ctx.ns(namespace), target)
    low = entry.min_replicas if entry.min_replicas is not None else 1
    current = int(deployment.body["spec"]["replicas"]) if deployment else low
    plan.objects.append(res.hpa(ctx, name, namespace, entry, current))


def _pvc(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: PvcState) -> None:
    declared_pv = f"pvc-{name}"
    pv_name = sandbox_name(ctx.prefix, ctx.env_id, declared_pv)
    objects = infra.pvc_and_pv(ctx, name, namespace, entry, pv_name)
    if any(o.kind == "PersistentVolume" for o in objects):
        plan.cluster_objects.append(
            ClusterObjectBinding(kind="PersistentVolume", declared=declared_pv, sandbox=pv_name)
        )
    plan.objects.extend(objects)


def _simple(factory: Callable[[TwinContext, str, str, Any], TwinObject]) -> Callable[..., None]:
    def build(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: DeclaredKind) -> None:
        plan.objects.append(factory(ctx, name, namespace, entry))

    return build


def _events(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: EventsState) -> None:
    # `events/<namespace>`: the name is the namespace the events belong to.
    plan.objects.extend(infra.declared_events(ctx, name if name in ctx.namespace_map else namespace, entry))


def _gitops(
    ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, entry: GitOpsApplicationState
) -> None:
    plan.objects.append(res.argo_application(ctx, name, namespace, entry))
    data = entry.model_dump(exclude_unset=True, exclude={"namespace"})  # what the gateway's API serves
    plan.fixtures.append(FixtureEntry(kind="gitops-application", name=name, namespace=namespace, data=data))


# Each Kubernetes kind's builder, by the model of its entry (kinds the gateway serves are fixtures).
_BUILDERS: dict[type[DeclaredKind], Callable[..., Any]] = {
    DeploymentState: _deployment,
    PodStateEntry: _pod,
    ConfigMapState: _simple(res.config_map),
    SecretState: _simple(res.secret),
    ServiceState: _service,
    IngressState: _ingress,
    NetworkPolicyState: _simple(res.network_policy),
    HpaState: _hpa,
    PvcState: _pvc,
    EventsState: _events,
    GitOpsApplicationState: _gitops,
    PdbState: _simple(res.pdb),
    ServiceAccountState: _simple(res.service_account),
    RoleState: _simple(res.role),
    RoleBindingState: _simple(res.role_binding),
}

# --- Workloads the sandbox's real controllers expand (their builders: `twin/controllers.py`) -----------
# Built before the HPAs and PDBs that may target them (an HPA reads its target's replicas).
_ORDER.update(dict.fromkeys(("statefulset", "daemonset", "job", "cronjob"), 2))
_BUILDERS.update(dict.fromkeys(controllers.MODELS, controllers.add_to_plan))
