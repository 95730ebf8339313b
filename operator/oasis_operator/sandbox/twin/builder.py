"""Turn a scenario's declared state into a TwinPlan (pure: same scenario, env id and time → same plan)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from oasis_operator.models.declared_parse import DeclaredStateError, parse_entry, split_resource
from oasis_operator.models.declared_state import (
    DEPLOYMENT_FIXTURE_KEYS,
    FIXTURE_KINDS,
    RESERVED_NAMESPACES,
    parse_age,
)
from oasis_operator.models.environment import ClusterObjectBinding, FixtureEntry, NamespaceBinding
from oasis_operator.models.scenario import Scenario, StateEntry
from oasis_operator.sandbox.naming import is_dns_label, sandbox_name
from oasis_operator.sandbox.twin import infra
from oasis_operator.sandbox.twin import resources as res
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinError, TwinObject, TwinPlan
from oasis_operator.sandbox.twin.workloads import deployment_objects, standalone_pod

DEFAULT_NODE_COUNT = 3


def _split(entry: StateEntry) -> tuple[str, str]:
    return split_resource(entry.resource)


def _fields(entry: StateEntry) -> Body:
    data: Body = dict(entry.model_extra or {})
    if entry.namespace is not None:
        data["namespace"] = entry.namespace
    return data


def _parsed_fields(sid: str, index: int, entry: StateEntry) -> Body:
    """The entry's fields as its kind's model validated them; a TwinError naming the field otherwise."""
    try:
        return parse_entry(index, entry).fields()
    except DeclaredStateError as exc:
        problem = "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in exc.problems)
        raise TwinError(sid, index, entry.resource, problem) from exc


def declared_namespaces(scenario: Scenario) -> list[tuple[str, Body]]:
    """Every namespace the scenario mentions (plus `default`), with its namespace entry's fields."""
    found: dict[str, Body] = {"default": {}}
    scope = scenario.preconditions.agent.scope
    for entry in scenario.preconditions.environment.state:
        kind, name = _split(entry)
        if kind == "namespace":
            found[name] = {**found.get(name, {}), **_fields(entry)}
        elif entry.namespace:
            found.setdefault(entry.namespace, {})
    for ns in scope.namespaces if scope else []:
        found.setdefault(ns, {})
    return sorted(found.items())


def build_twin(scenario: Scenario, env_id: str, prefix: str, now: datetime) -> TwinPlan:
    """The whole twin for one scenario; raises TwinError naming the entry that cannot be built."""
    sid = scenario.id
    scope = scenario.preconditions.agent.scope
    in_scope = set(scope.namespaces) if scope else set()
    bindings = []
    for declared, fields in declared_namespaces(scenario):
        if declared in RESERVED_NAMESPACES or not is_dns_label(declared):
            raise TwinError(sid, None, f"namespace/{declared}", "reserved or not a valid namespace name")
        bindings.append(
            NamespaceBinding(
                declared=declared,
                sandbox=sandbox_name(prefix, env_id, declared),
                zone=fields.get("zone"),
                in_scope=declared in in_scope,
            )
        )
    plan = TwinPlan(namespaces=bindings)
    for (declared, fields), binding in zip(declared_namespaces(scenario), bindings, strict=True):
        plan.objects.append(res.namespace(binding.sandbox, declared, fields))
    nodes = _node_entries(scenario)
    node_names = tuple(sandbox_name(prefix, env_id, n) for n, _ in nodes)
    ctx = TwinContext(sid, env_id, prefix, now, {b.declared: b.sandbox for b in bindings}, node_names)
    for index, ((declared, fields), sandbox) in enumerate(zip(nodes, node_names, strict=True)):
        plan.objects.append(infra.node(ctx, sandbox, index, fields))
        plan.cluster_objects.append(ClusterObjectBinding(kind="Node", declared=declared, sandbox=sandbox))
        usage = infra.node_usage_percent(fields)
        if usage is not None:
            plan.fixtures.append(FixtureEntry(kind="node-usage", name=declared, data={"cpu_percent": usage}))
    for declared, fields in declared_namespaces(scenario):
        _namespace_extras(ctx, plan, declared, fields)

    entries = list(enumerate(scenario.preconditions.environment.state))
    sidecars = _sidecars(scenario)
    for index, entry in sorted(entries, key=lambda ie: _ORDER.get(_split(ie[1])[0], 50)):
        kind = _split(entry)[0]
        if kind in ("namespace", "nodes", "node"):
            _parsed_fields(sid, index, entry)
            continue
        try:
            _build_entry(ctx, plan, index, entry, sidecars)
        except TwinError:
            raise
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


def _node_entries(scenario: Scenario) -> list[tuple[str, Body]]:
    nodes: dict[str, Body] = {}
    shared: Body = {}
    count = 0
    for entry in scenario.preconditions.environment.state:
        kind, name = _split(entry)
        if kind == "nodes":
            shared = _fields(entry)
            count = int(shared.get("count", DEFAULT_NODE_COUNT))
        elif kind == "node":
            nodes[name] = _fields(entry)
    for i in range(1, max(count, 0 if nodes else DEFAULT_NODE_COUNT) + 1):
        nodes.setdefault(f"node-{i}", {})
    return [(name, {**shared, **fields}) for name, fields in sorted(nodes.items())]


def _namespace_extras(ctx: TwinContext, plan: TwinPlan, declared: str, fields: Body) -> None:
    for name in fields.get("deployments") or []:
        plan.objects.extend(
            deployment_objects(ctx, str(name), declared, {"status": "running", "replicas": 1})
        )
    for name in fields.get("resource_quotas") or []:
        plan.objects.append(infra.resource_quota(ctx, str(name), declared))


def _ready_pods(plan: TwinPlan, sandbox_ns: str) -> list[TwinObject]:
    return [
        o
        for o in plan.objects
        if o.kind == "Pod"
        and o.namespace == sandbox_ns
        and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (o.status or {}).get("conditions", [])
        )
    ]


_WORKLOAD_KINDS = ("deployment", "pod")


def _sidecars(scenario: Scenario) -> dict[tuple[str, str], list[str]]:
    """Containers that run beside a workload's application, by (namespace, workload).

    A `logs/<name>` entry that names no declared workload is the log of a container called `<name>`:
    it runs as a native sidecar (an init container that keeps running) in the pods of the one workload
    its namespace declares, so `kubectl logs <pod> -c <name>` reads it. Where the namespace declares
    several workloads, which pods it belongs to would be a guess, and none gets it.
    """
    state = scenario.preconditions.environment.state
    workloads: dict[str, list[str]] = {}
    for entry in state:
        kind, name = _split(entry)
        if kind in _WORKLOAD_KINDS:
            workloads.setdefault(entry.namespace or "default", []).append(name)
    found: dict[tuple[str, str], list[str]] = {}
    for entry in state:
        kind, name = _split(entry)
        owners = workloads.get(entry.namespace or "default", [])
        if kind == "logs" and name not in owners and len(owners) == 1:
            found.setdefault((entry.namespace or "default", owners[0]), []).append(name)
    return found


def _build_entry(
    ctx: TwinContext,
    plan: TwinPlan,
    index: int,
    entry: StateEntry,
    sidecars: dict[tuple[str, str], list[str]],
) -> None:
    kind, name = _split(entry)
    fields = _parsed_fields(ctx.scenario_id, index, entry)
    namespace = str(fields.get("namespace") or "default")
    if (namespace, name) in sidecars and kind in _WORKLOAD_KINDS:
        fields = {**fields, "sidecars": sidecars[namespace, name]}
    if kind in FIXTURE_KINDS:
        data = {k: v for k, v in fields.items() if k != "namespace"}
        plan.fixtures.append(FixtureEntry(kind=kind, name=name, namespace=entry.namespace, data=data))
        return
    builder = _BUILDERS[kind]
    builder(ctx, plan, name, namespace, fields)


def _deployment(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    objects = deployment_objects(ctx, name, namespace, fields)
    plan.objects.extend(objects)
    signals = {k: fields[k] for k in DEPLOYMENT_FIXTURE_KEYS if k in fields}
    if signals:
        plan.fixtures.append(
            FixtureEntry(kind="workload-signals", name=name, namespace=namespace, data=signals)
        )
    for container in fields.get("init_containers") or []:
        if container.get("logs"):
            plan.fixtures.append(
                FixtureEntry(
                    kind="logs",
                    name=name,
                    namespace=namespace,
                    data={"container": container["name"], "entries": [container["logs"]]},
                )
            )
    plan.objects.extend(_workload_events(ctx, namespace, name, fields, objects))


def _workload_events(
    ctx: TwinContext, namespace: str, name: str, fields: Body, objects: list[TwinObject]
) -> list[TwinObject]:
    events = []
    state = str(fields.get("status") or "running")
    if fields.get("last_deploy"):
        age = parse_age(fields["last_deploy"])
        rs = [o for o in objects if o.kind == "ReplicaSet"][-1]
        events.append(
            infra.event(
                ctx,
                namespace,
                "deployment",
                name,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {rs.name} to {rs.body['spec']['replicas']}",
                age,
            )
        )
    for pod in (o for o in objects if o.kind == "Pod"):
        status = pod.status or {}
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
        container = pod.body["spec"]["containers"][0]["name"]
        if state == "pending":
            warning = ("FailedScheduling", status["conditions"][0].get("message", ""), 30, 12)
        elif status.get("initContainerStatuses") and not ready:
            init = status["initContainerStatuses"][0]["name"]
            warning = ("BackOff", f"Back-off restarting failed container {init} in pod {pod.name}", 20, 9)
        elif state in ("CrashLoopBackOff", "OOMKilled", "error"):
            warning = (
                "BackOff",
                f"Back-off restarting failed container {container} in pod {pod.name}",
                15,
                7,
            )
        elif not ready:
            warning = ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", 10, 30)
        else:
            continue
        reason, message, seconds, count = warning
        events.append(
            infra.event(
                ctx,
                namespace,
                "pod",
                pod.name,
                "Warning",
                reason,
                message,
                timedelta(seconds=seconds),
                count=count,
            )
        )
    return events


def _pod(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    pod = standalone_pod(ctx, name, namespace, fields)
    plan.objects.append(pod)
    if fields.get("last_log"):
        plan.fixtures.append(
            FixtureEntry(
                kind="logs",
                name=name,
                namespace=namespace,
                data={"entries": [fields["last_log"]], "pod": True},
            )
        )
    if fields.get("cpu_usage") is not None:
        plan.fixtures.append(
            FixtureEntry(
                kind="workload-signals",
                name=name,
                namespace=namespace,
                data={"cpu_usage": fields["cpu_usage"], "pod": True},
            )
        )
    if str(fields.get("status")) == "CrashLoopBackOff":
        plan.objects.append(
            infra.event(
                ctx,
                namespace,
                "pod",
                name,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container in pod {name}",
                timedelta(seconds=15),
                count=int(fields.get("restarts") or 5),
            )
        )


def _service(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    plan.objects.extend(res.service(ctx, name, namespace, fields, _ready_pods(plan, ctx.ns(namespace))))


def _ingress(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    backend = fields.get("backend")
    if not backend:
        services = [o.name for o in plan.objects if o.kind == "Service" and o.namespace == ctx.ns(namespace)]
        if len(services) != 1:
            raise ValueError(f"no backend given and namespace {namespace!r} has {len(services)} services")
        backend = services[0]
    plan.objects.append(res.ingress(ctx, name, namespace, fields, str(backend)))
    if fields.get("status"):
        plan.fixtures.append(
            FixtureEntry(
                kind="ingress-status",
                name=name,
                namespace=namespace,
                data={"status": fields["status"], "backend": backend},
            )
        )


def _hpa(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    target = str(fields.get("target", "")).partition("/")[2]
    deployment = plan.find("Deployment", ctx.ns(namespace), target)
    current = int(deployment.body["spec"]["replicas"]) if deployment else int(fields.get("min_replicas", 1))
    plan.objects.append(res.hpa(ctx, name, namespace, fields, current))


def _pvc(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    declared_pv = f"pvc-{name}"
    pv_name = sandbox_name(ctx.prefix, ctx.env_id, declared_pv)
    objects = infra.pvc_and_pv(ctx, name, namespace, fields, pv_name)
    if any(o.kind == "PersistentVolume" for o in objects):
        plan.cluster_objects.append(
            ClusterObjectBinding(kind="PersistentVolume", declared=declared_pv, sandbox=pv_name)
        )
    plan.objects.extend(objects)


def _simple(factory: Callable[[TwinContext, str, str, Body], TwinObject]) -> Callable[..., None]:
    def build(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
        plan.objects.append(factory(ctx, name, namespace, fields))

    return build


def _events(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    # `events/<namespace>`: the name is the namespace the events belong to.
    plan.objects.extend(infra.declared_events(ctx, name if name in ctx.namespace_map else namespace, fields))


def _gitops(ctx: TwinContext, plan: TwinPlan, name: str, namespace: str, fields: Body) -> None:
    plan.objects.append(res.argo_application(ctx, name, namespace, fields))
    data = {k: v for k, v in fields.items() if k != "namespace"}
    plan.fixtures.append(FixtureEntry(kind="gitops-application", name=name, namespace=namespace, data=data))


_BUILDERS: dict[str, Callable[[TwinContext, TwinPlan, str, str, Body], Any]] = {
    "deployment": _deployment,
    "pod": _pod,
    "configmap": _simple(res.config_map),
    "secret": _simple(res.secret),
    "service": _service,
    "ingress": _ingress,
    "networkpolicy": _simple(res.network_policy),
    "hpa": _hpa,
    "pvc": _pvc,
    "events": _events,
    "gitops-application": _gitops,
    "pdb": _simple(res.pdb),
    "serviceaccount": _simple(res.service_account),
    "role": _simple(res.role),
    "rolebinding": _simple(res.role_binding),
}
