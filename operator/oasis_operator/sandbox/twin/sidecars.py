"""Native sidecars a scenario implies: a container log with no workload of its own runs beside one."""

from __future__ import annotations

from oasis_operator.models.declared_parse import split_resource
from oasis_operator.models.scenario import Scenario

_WORKLOAD_KINDS = ("deployment", "pod")


def sidecars_by_workload(scenario: Scenario) -> dict[tuple[str, str], tuple[str, ...]]:
    """Containers that run beside a workload's application, by (namespace, workload).

    A `logs/<name>` entry that names no declared workload is the log of a container called `<name>`:
    it runs as a native sidecar (an init container that keeps running) in the pods of the one workload
    its namespace declares, so `kubectl logs <pod> -c <name>` reads it. Where the namespace declares
    several workloads, which pods it belongs to would be a guess, and none gets it.
    """
    state = scenario.preconditions.environment.state
    workloads: dict[str, list[str]] = {}
    for entry in state:
        kind, name = split_resource(entry.resource)
        if kind in _WORKLOAD_KINDS:
            workloads.setdefault(entry.namespace or "default", []).append(name)
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for entry in state:
        kind, name = split_resource(entry.resource)
        owners = workloads.get(entry.namespace or "default", [])
        if kind == "logs" and name not in owners and len(owners) == 1:
            key = (entry.namespace or "default", owners[0])
            found[key] = (*found.get(key, ()), name)
    return found
