"""Read an environment's state as the agent would name it: the before/after snapshots of a scenario run.

A snapshot is every declared resource (read by name, absent ones recorded as absent) plus every
ReplicaSet, Job and Pod of the declared namespaces (`snapshot.DERIVED_KINDS`): the ones the twin derived
from declared workloads, the ones the controllers made since, and any the agent created. Matching by
effect needs them (which pods a `delete pods --all` removed, which ReplicaSet's image a template write
went back to); derived ones are marked by their controller owner reference (see `sandbox.snapshot`).

The before-snapshot needs no reads for what provisioning wrote: each object's last write answered with
the whole object as the server stored it, and nothing else writes to a sandbox before its agent starts
(no workload controller runs; the agent has no credentials yet). Those answers (`Written`) stand in for
the GETs and for the lists of the derived kinds; only resources provisioning did not write (those a
verification names that the twin did not build) are read. A test holds both ways equal on every
shipped scenario.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from pydantic import BaseModel, ConfigDict

from oasis_operator import API_GROUP
from oasis_operator.kube import RESOURCES, request, resource_path
from oasis_operator.models.environment import Environment
from oasis_operator.models.kinds import API_RESOURCES, ASSERTED_KINDS, SNAPSHOT_KINDS
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.snapshot import (
    DERIVED_KINDS,
    ResourceSnapshot,
    field_managers,
    normalise,
)
from oasis_operator.sandbox.twin import TwinPlan
from oasis_operator.sandbox.twin.plan import Body

DERIVED_API_VERSIONS = {kind: API_RESOURCES[kind][0] for kind in DERIVED_KINDS}
READS_AT_ONCE = 4  # snapshot requests in flight together
# What provisioning wrote, by (kind, sandbox namespace or None, sandbox name): the server's last answer.
Written = dict[tuple[str, str | None, str], Body]


class ResourceRef(BaseModel):
    """A declared resource, by the names the agent uses (kind, declared namespace, name)."""

    model_config = ConfigDict(frozen=True)

    kind: str
    namespace: str | None
    name: str
    api_version: str


def declared_resources(plan: TwinPlan, env: Environment) -> list[ResourceRef]:
    """The declared resources of the plan (not the ReplicaSets, Pods and Events the twin derives)."""
    declared = {b.sandbox: b.declared for b in env.namespaces}
    nodes = {o.sandbox: o.declared for o in env.cluster_objects}
    refs = []
    for obj in plan.objects:
        if obj.kind not in SNAPSHOT_KINDS or obj.owner is not None:
            continue
        if obj.kind == "Namespace":
            refs.append(
                ResourceRef(kind="Namespace", namespace=None, name=declared[obj.name], api_version="v1")
            )
        elif obj.kind == "Node":
            refs.append(ResourceRef(kind="Node", namespace=None, name=nodes[obj.name], api_version="v1"))
        else:
            ns = declared.get(obj.namespace or "")
            refs.append(ResourceRef(kind=obj.kind, namespace=ns, name=obj.name, api_version=obj.api_version))
    return refs


def asserted_resources(scenario: Scenario, declared: list[ResourceRef]) -> list[ResourceRef]:
    """Objects the verification names that the twin did not build (e.g. a PDB the agent must create),
    so the before snapshot records them absent and the after snapshot shows what the agent made."""
    have = {(r.kind, r.namespace, r.name) for r in declared}
    scope = scenario.preconditions.agent.scope
    home = (scope.namespaces[0] if scope and scope.namespaces else None) or "default"
    out: list[ResourceRef] = []
    for entry in scenario.verification.state_assertions:
        kind_type, _, name = (entry.resource or "").partition("/")
        kind = ASSERTED_KINDS.get(kind_type)
        if kind is None or not name or "*" in name:
            continue
        ref = ResourceRef(
            kind=kind, namespace=entry.namespace or home, name=name, api_version=RESOURCES[kind][0]
        )
        if (ref.kind, ref.namespace, ref.name) not in have and ref not in out:
            out.append(ref)
    return out


def read_snapshot(
    api: ApiClient,
    env: Environment,
    resources: list[ResourceRef],
    written: Mapping[tuple[str, str | None, str], Body] | None = None,
) -> list[ResourceSnapshot]:
    """Declared resources in `resources` order, then the derived kinds' objects (ReplicaSets, Jobs, Pods)
    by (kind, namespace, name).

    With `written` (everything the sandbox holds, as provisioning wrote it), objects found there are
    taken from it and the derived kinds' objects are those it holds, instead of being read.
    """
    renames = env.renames()

    def snapshot_of(kind: str, namespace: str | None, name: str, obj: Body) -> ResourceSnapshot:
        return ResourceSnapshot(
            kind=kind,
            namespace=namespace,
            name=name,
            exists=True,
            object=normalise(strip_bookkeeping(obj), renames, keep_status=True),
            managers=field_managers(obj),
        )

    def read(ref: ResourceRef) -> ResourceSnapshot:
        namespace = env.sandbox_namespace(ref.namespace) if ref.namespace else None
        if ref.namespace and namespace is None:
            # A namespace the twin does not have (a verification naming one the scenario never declared):
            # the object cannot exist there, and a path without it would read a cluster-wide list.
            return ResourceSnapshot(kind=ref.kind, namespace=ref.namespace, name=ref.name, exists=False)
        name = ref.name
        if ref.kind == "Namespace":
            name = env.sandbox_namespace(ref.name) or ref.name
        elif ref.kind == "Node":
            name = env.sandbox_object_name("Node", ref.name) or ref.name
        if written is not None and (ref.kind, namespace, name) in written:
            return snapshot_of(
                ref.kind, ref.namespace, ref.name, copy.deepcopy(written[(ref.kind, namespace, name)])
            )
        try:
            obj = request(api, "GET", resource_path(ref.kind, namespace, name, api_version=ref.api_version))
        except ApiException as exc:
            if exc.status != 404:
                raise
            return ResourceSnapshot(kind=ref.kind, namespace=ref.namespace, name=ref.name, exists=False)
        return snapshot_of(ref.kind, ref.namespace, ref.name, obj)

    def listed(where: tuple[str, str, str]) -> list[Body]:
        kind, sandbox, _ = where
        if written is not None:
            return [copy.deepcopy(o) for (k, ns, _), o in written.items() if (k, ns) == (kind, sandbox)]
        items: list[Body] = request(
            api, "GET", resource_path(kind, sandbox, api_version=DERIVED_API_VERSIONS[kind])
        )["items"]
        return items

    declared = {(r.kind, r.namespace, r.name) for r in resources}
    lists = [(kind, b.sandbox, b.declared) for b in env.namespaces for kind in DERIVED_KINDS]
    # The twin is quiescent while it is read (provisioned, or the agent done and dynamics stopped), so
    # reading it with a few requests at once sees what reading it one request at a time would.
    # The reads and the lists are all queued before any answer is awaited: one batch, not two.
    with ThreadPoolExecutor(READS_AT_ONCE, thread_name_prefix="snapshot") as pool:
        reading = [pool.submit(read, ref) for ref in resources]
        listing = [pool.submit(listed, where) for where in lists]
        result = [future.result() for future in reading]
        found = [future.result() for future in listing]
    derived = [
        snapshot_of(kind, declared_ns, item["metadata"]["name"],
                    {"apiVersion": DERIVED_API_VERSIONS[kind], "kind": kind, **item})
        for (kind, _, declared_ns), items in zip(lists, found, strict=True)
        for item in items
        if (kind, declared_ns, item["metadata"]["name"]) not in declared
    ]  # fmt: skip
    return result + sorted(derived, key=lambda s: (s.kind, s.namespace or "", s.name))


def strip_bookkeeping(obj: Body) -> Body:
    """The object without the sandbox's own labels and annotations (the agent never sees them either)."""
    meta = obj.get("metadata", {})
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if values:
            meta[key] = {k: v for k, v in values.items() if not k.startswith(f"{API_GROUP}/")}
            if not meta[key]:
                meta.pop(key)
    return obj
