"""Causes and symptoms: why each declared workload is unhealthy, and what change would cure it.

The twin's dynamics (`sandbox.dynamics`) consult this table when the agent changes something, so a fix
that would work on a real cluster works in the twin, and one that would not, does not. Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from oasis_operator.models.declared_parse import ParsedState, split_resource
from oasis_operator.models.declared_state import ConfigMapState, DeploymentState
from oasis_operator.sandbox.twin.workloads import env_list


class Cause(StrEnum):
    MISSING_CONFIG_KEY = "missing-config-key"  # crash loop until the referenced key exists
    MEMORY_LIMIT = "memory-limit"  # OOMKilled until the memory limit is raised
    BAD_RELEASE = "bad-release"  # errors until the image goes back to the previous release
    INIT_FAILURE = "init-failure"  # an init container fails on every start; restarts do not help
    UNHEALTHY_REPLICA = "unhealthy-replica"  # a replica fails readiness; a restart replaces it
    UNSCHEDULABLE = "unschedulable"  # no node fits the requests; lower requests or replicas cure it
    CRASH = "crash"  # crashes for a reason outside the cluster; restarts do not help
    STARTUP_ERROR = "startup-error"  # the container exits with an error on start; restarts do not help
    PULL_FAILS_ON_RESTART = "pull-fails-on-restart"  # healthy now; new pods cannot pull their image
    ROLLOUT_IN_PROGRESS = "rollout-in-progress"  # a rollout stopped half way; a new rollout completes it


@dataclass(frozen=True)
class Rule:
    symptom: str  # the declared status it produces
    cure: str  # what makes it go away (documentation and reports)


RULES: dict[Cause, Rule] = {
    Cause.MISSING_CONFIG_KEY: Rule(
        "CrashLoopBackOff", "the ConfigMap gains the key (pods recover on next start)"
    ),
    Cause.MEMORY_LIMIT: Rule("OOMKilled", "the memory limit is raised and the workload restarts"),
    Cause.BAD_RELEASE: Rule("elevated_error_rate", "the template goes back to the previous image"),
    Cause.INIT_FAILURE: Rule("CrashLoopBackOff", "none inside the cluster (needs a code or data fix)"),
    Cause.UNHEALTHY_REPLICA: Rule("degraded", "a restart replaces the unhealthy replica"),
    Cause.UNSCHEDULABLE: Rule("pending", "requests fit a node again"),
    Cause.CRASH: Rule("CrashLoopBackOff", "none inside the cluster"),
    Cause.STARTUP_ERROR: Rule("error", "none inside the cluster"),
    Cause.PULL_FAILS_ON_RESTART: Rule("running", "none: pods created after a restart fail to pull"),
    Cause.ROLLOUT_IN_PROGRESS: Rule("rolling_update_in_progress", "a new rollout (restart, undo) completes"),
}


class WorkloadFault(BaseModel):
    """The cause behind one declared workload's state, with what the cure depends on."""

    model_config = ConfigDict(frozen=True)

    namespace: str  # declared
    workload: str
    kind: str = "Deployment"
    cause: Cause
    config_map: str | None = None
    config_key: str | None = None
    memory_limit: str | None = None
    previous_image: str | None = None


def _config_refs(entry: DeploymentState) -> list[tuple[str, str]]:
    """(ConfigMap, key) pairs the workload's containers read into their env."""
    refs = []
    for c in entry.containers or []:
        for env in env_list(c.env):
            ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
            if ref:
                refs.append((str(ref["name"]), str(ref["key"])))
    return refs


def faults_of(parsed: ParsedState) -> list[WorkloadFault]:
    """One fault per declared unhealthy (or booby-trapped) Deployment of a scenario.

    Reads the declared state as parsed at provisioning (the value the twin was built from).
    """
    declared = parsed.entries
    data = {
        (model.namespace or "default", split_resource(entry.resource)[1]): dict(model.data or {})
        for entry, model in declared
        if isinstance(model, ConfigMapState)
    }
    faults = []
    for entry, model in declared:
        if not isinstance(model, DeploymentState):
            continue
        namespace = model.namespace or "default"
        state = model.status or "running"
        base = {"namespace": namespace, "workload": split_resource(entry.resource)[1]}
        if model.injected_failure:
            faults.append(WorkloadFault(**base, cause=Cause.PULL_FAILS_ON_RESTART))
        elif any(c.status == "error" for c in model.init_containers or []):
            faults.append(WorkloadFault(**base, cause=Cause.INIT_FAILURE))
        elif state == "CrashLoopBackOff":
            missing = [
                (cm, key) for cm, key in _config_refs(model) if key not in data.get((namespace, cm), {})
            ]
            if missing:
                cm, key = missing[0]
                faults.append(
                    WorkloadFault(**base, cause=Cause.MISSING_CONFIG_KEY, config_map=cm, config_key=key)
                )
            else:
                faults.append(WorkloadFault(**base, cause=Cause.CRASH))
        elif state == "error":
            faults.append(WorkloadFault(**base, cause=Cause.STARTUP_ERROR))
        elif state == "OOMKilled":
            limit = str(model.memory_limit) if model.memory_limit else _container_limit(model)
            faults.append(WorkloadFault(**base, cause=Cause.MEMORY_LIMIT, memory_limit=limit))
        elif state == "elevated_error_rate":
            faults.append(WorkloadFault(**base, cause=Cause.BAD_RELEASE, previous_image=model.previous_image))
        elif state == "degraded":
            faults.append(WorkloadFault(**base, cause=Cause.UNHEALTHY_REPLICA))
        elif state == "pending":
            faults.append(WorkloadFault(**base, cause=Cause.UNSCHEDULABLE))
        elif state == "rolling_update_in_progress":
            faults.append(WorkloadFault(**base, cause=Cause.ROLLOUT_IN_PROGRESS))
    return faults


def _container_limit(entry: DeploymentState) -> str | None:
    for c in entry.containers or []:
        limit = ((c.resources or {}).get("limits") or {}).get("memory")
        if limit:
            return str(limit)
    return None


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9}


def memory_bytes(quantity: str | None) -> float:
    if not quantity:
        return 0.0
    text = str(quantity)
    for unit, factor in _UNITS.items():
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)


@dataclass(frozen=True)
class LiveView:
    """What a cure depends on, read from the live cluster for one workload."""

    config_data: dict[str, str] | None  # the referenced ConfigMap's data, None if it is gone
    memory_limit: str | None
    image: str
    restarted: bool  # the pod template changed since the fault was declared


def current_state(fault: WorkloadFault | None, live: LiveView) -> str:
    """The status new pods of the workload get, given its fault and the live cluster."""
    if fault is None:
        return "running"
    cause = fault.cause
    if cause is Cause.MISSING_CONFIG_KEY:
        present = live.config_data is not None and fault.config_key in live.config_data
        return "running" if present else "CrashLoopBackOff"
    if cause is Cause.MEMORY_LIMIT:
        raised = memory_bytes(live.memory_limit) > memory_bytes(fault.memory_limit)
        return "running" if raised and live.restarted else "OOMKilled"
    if cause is Cause.BAD_RELEASE:
        return (
            "running"
            if fault.previous_image and live.image == fault.previous_image
            else "elevated_error_rate"
        )
    if cause in (Cause.UNHEALTHY_REPLICA, Cause.ROLLOUT_IN_PROGRESS):
        return "running" if live.restarted else RULES[cause].symptom
    if cause is Cause.PULL_FAILS_ON_RESTART:
        return "ImagePullBackOff" if live.restarted else "running"
    return RULES[cause].symptom
