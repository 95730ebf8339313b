"""Causes and symptoms: why each declared workload is unhealthy, and the kwok Stage that makes it so.

A scenario declares a workload's state (`CrashLoopBackOff`, `OOMKilled`, `pending`, ...); `faults_of`
reads the cause behind it from the rest of the declared state (the ConfigMap key its env references and
the ConfigMap lacks, the memory limit, the init container that fails, ...). `fault_stages` turns a cause
into the kwok Stage (`world/stages.yaml`) whose selector names exactly the pods that suffer it: the
workload's pods, narrowed by what the cause depends on in the pod itself. The agent's real fix changes
that (a raised limit or a rollback gives new pods another template; a restart gives new pods), so what
the controllers create after it starts healthy, through the real machinery. Two causes need no Stage:
an unschedulable workload asks for more than any node has (`twin.workloads.unschedulable_requests`: the
scheduler keeps it Pending), and a bad release runs, its errors being the gateway's metrics.

A missing ConfigMap key is the one cause outside the pod: the kubelet reads the ConfigMap when it starts
the container. `sandbox.world_watch` plays that part, keeping the fault's Stage while the key is missing.

Pure functions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from kubernetes.utils import parse_quantity
from kubernetes.utils.quantity import _BINARY_PREFIXES as _QUANTITY_BINARY
from kubernetes.utils.quantity import _EXPONENTS as _QUANTITY_EXPONENTS
from pydantic import BaseModel, ConfigDict

from oasis_operator.models.declared_parse import ParsedState, split_resource
from oasis_operator.models.declared_state import ConfigMapState, DeploymentState, PodStateEntry
from oasis_operator.models.declared_workloads import (
    DaemonSetState,
    JobState,
    PodTemplateState,
    StatefulSetState,
)
from oasis_operator.models.environment import Environment
from oasis_operator.sandbox.kwok import expression, fault_stage
from oasis_operator.sandbox.twin.workloads import default_image, env_list

Body = dict[str, Any]
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
# Restarts a looping container has when the agent first sees it, unless the scenario says how many: a
# crash loop that has been going on a while (a first crash at restart 0 is not what a cluster shows).
DEFAULT_RESTARTS = {"crash": 5, "oom": 3, "init-failure": 4}


class Cause(StrEnum):
    MISSING_CONFIG_KEY = "missing-config-key"  # crash loop while the referenced key is missing
    MEMORY_LIMIT = "memory-limit"  # OOMKilled until the memory limit is raised
    BAD_RELEASE = "bad-release"  # errors until the image goes back to the previous release
    INIT_FAILURE = "init-failure"  # an init container fails on every start; restarts do not help
    UNHEALTHY_REPLICA = "unhealthy-replica"  # a replica fails readiness; a restart replaces it
    UNSCHEDULABLE = "unschedulable"  # no node fits the requests; lower requests or replicas cure it
    CRASH = "crash"  # crashes for a reason outside the cluster; restarts do not help
    STARTUP_ERROR = "startup-error"  # the container exits with an error on start; restarts do not help
    PULL_FAILS_ON_RESTART = "pull-fails-on-restart"  # healthy now; new pods cannot pull their image
    ROLLOUT_IN_PROGRESS = "rollout-in-progress"  # a rollout stopped half way; a new rollout completes it
    IMAGE_PULL = "image-pull"  # the image cannot be pulled (a pod declared ImagePullBackOff)
    JOB_FAILURE = "job-failure"  # a Job's pods exit with an error until its backoff limit


@dataclass(frozen=True)
class Rule:
    symptom: str  # the declared status it produces
    stage: str | None  # the fault template of world/stages.yaml that produces it (None: no Stage)
    cure: str  # what makes it go away (documentation and reports)
    after_pods: bool = False  # its Stage names pods that exist once the workload is up
    touches_pods: bool = False  # those pods are running already: kwok is made to look at them again


RULES: dict[Cause, Rule] = {
    Cause.MISSING_CONFIG_KEY: Rule(
        "CrashLoopBackOff", "crash", "the ConfigMap gains the key (the container starts on its next try)"
    ),
    Cause.MEMORY_LIMIT: Rule("OOMKilled", "oom", "the memory limit is raised above the declared one"),
    Cause.BAD_RELEASE: Rule("elevated_error_rate", None, "the template goes back to the previous image"),
    Cause.INIT_FAILURE: Rule("CrashLoopBackOff", "init-failure", "none inside the cluster"),
    Cause.UNHEALTHY_REPLICA: Rule(
        "degraded", "unready", "the unhealthy replica is replaced", after_pods=True, touches_pods=True
    ),
    Cause.UNSCHEDULABLE: Rule("pending", None, "requests fit a node again"),
    Cause.CRASH: Rule("CrashLoopBackOff", "crash", "none inside the cluster"),
    Cause.STARTUP_ERROR: Rule("error", "crash", "none inside the cluster"),
    Cause.PULL_FAILS_ON_RESTART: Rule(
        "running", "image-pull", "none: pods created after a restart fail to pull", after_pods=True
    ),
    Cause.ROLLOUT_IN_PROGRESS: Rule(
        "rolling_update_in_progress", "unready", "a new rollout (restart, undo, another image) completes"
    ),
    Cause.IMAGE_PULL: Rule("ImagePullBackOff", "image-pull", "an image that can be pulled"),
    Cause.JOB_FAILURE: Rule("failed", "exit-error", "none inside the cluster (the job's own error)"),
}


class WorkloadFault(BaseModel):
    """The cause behind one declared workload's state, with what its Stage's selector depends on."""

    model_config = ConfigDict(frozen=True)

    namespace: str  # declared
    workload: str
    kind: str = "Deployment"  # or StatefulSet, DaemonSet, Job, or Pod (a pod declared on its own)
    cause: Cause
    config_map: str | None = None
    config_key: str | None = None
    memory_limit: str | None = None
    previous_image: str | None = None
    image: str | None = None  # the release a rollout in progress is stuck on, or that cannot be pulled
    init_container: str | None = None
    restarts: int = 0
    ordered: bool = False  # a StatefulSet that makes its pods one at a time (OrderedReady, the default)


# The Stages that crash a container that has started: a StatefulSet making its pods in order creates its
# next pod only once the one before is Ready, which a pod crashing from its first start never is. All its
# replicas crash-looping is a set that was up and then began to crash (what `after_pods` gives).
CRASH_STAGES = frozenset({"crash", "oom"})


def after_pods(fault: WorkloadFault) -> bool:
    """Its Stage comes once the workload is up (its rule says so, or a crash of an ordered StatefulSet)."""
    rule = RULES[fault.cause]
    return rule.after_pods or (fault.ordered and rule.stage in CRASH_STAGES)


def touches_pods(fault: WorkloadFault) -> bool:
    """Its Stage is for pods that are running already: kwok is made to look at them again."""
    rule = RULES[fault.cause]
    return rule.touches_pods or (fault.ordered and rule.stage in CRASH_STAGES)


def _config_refs(entry: DeploymentState) -> list[tuple[str, str]]:
    """(ConfigMap, key) pairs the workload's containers read into their env."""
    refs = []
    for c in entry.containers or []:
        for env in env_list(c.env):
            ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
            if ref:
                refs.append((str(ref["name"]), str(ref["key"])))
    for env in env_list(entry.env):
        ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
        if ref:
            refs.append((str(ref["name"]), str(ref["key"])))
    return refs


def _deployment_fault(base: Body, model: DeploymentState, data: dict[tuple[str, str], Body]) -> Body | None:
    state = model.status or "running"
    namespace = base["namespace"]
    failing_init = next((c.name for c in model.init_containers or [] if c.status == "error"), None)
    if model.injected_failure:
        return {**base, "cause": Cause.PULL_FAILS_ON_RESTART}
    if failing_init is not None:
        return {**base, "cause": Cause.INIT_FAILURE, "init_container": failing_init}
    if state == "CrashLoopBackOff":
        missing = [(cm, key) for cm, key in _config_refs(model) if key not in data.get((namespace, cm), {})]
        if missing:
            cm, key = missing[0]
            return {**base, "cause": Cause.MISSING_CONFIG_KEY, "config_map": cm, "config_key": key}
        return {**base, "cause": Cause.CRASH}
    if state == "error":
        return {**base, "cause": Cause.STARTUP_ERROR}
    if state == "OOMKilled":
        limit = str(model.memory_limit) if model.memory_limit else _container_limit(model)
        return {**base, "cause": Cause.MEMORY_LIMIT, "memory_limit": limit}
    if state == "elevated_error_rate":
        return {**base, "cause": Cause.BAD_RELEASE, "previous_image": model.previous_image}
    if state == "degraded":
        return {**base, "cause": Cause.UNHEALTHY_REPLICA}
    if state == "pending":
        return {**base, "cause": Cause.UNSCHEDULABLE}
    if state == "rolling_update_in_progress":
        image = model.current_image or model.image or default_image(base["workload"])
        return {**base, "cause": Cause.ROLLOUT_IN_PROGRESS, "image": str(image)}
    if state == "ImagePullBackOff":
        return {**base, "cause": Cause.IMAGE_PULL, "image": _main_image(model, base["workload"])}
    return None


def _main_image(entry: DeploymentState, name: str) -> str:
    """The image of the workload's first container, as the twin writes it."""
    if entry.containers and entry.containers[0].image is not None:
        return str(entry.containers[0].image)
    return str(entry.current_image or entry.image or default_image(name))


_POD_CAUSES = {
    "CrashLoopBackOff": Cause.CRASH,
    "error": Cause.STARTUP_ERROR,
    "OOMKilled": Cause.MEMORY_LIMIT,
    "ImagePullBackOff": Cause.IMAGE_PULL,
    "pending": Cause.UNSCHEDULABLE,
    "degraded": Cause.UNHEALTHY_REPLICA,
    "rolling_update_in_progress": Cause.UNHEALTHY_REPLICA,
}


def faults_of(parsed: ParsedState) -> list[WorkloadFault]:
    """One fault per declared unhealthy (or booby-trapped) Deployment or Pod of a scenario.

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
        name = split_resource(entry.resource)[1]
        base: Body = {"namespace": model.namespace or "default", "workload": name}
        if isinstance(model, DeploymentState):
            base["restarts"] = model.restarts or 0
            found = _deployment_fault(base, model, data)
        elif isinstance(model, StatefulSetState | DaemonSetState):
            base.update(kind=KIND_OF[type(model)], restarts=model.restarts or 0)
            if isinstance(model, StatefulSetState):
                base["ordered"] = model.pod_management_policy != "Parallel"
            found = _deployment_fault(base, as_deployment(model), data)
        elif isinstance(model, JobState) and model.status == "failed":
            found = {**base, "kind": "Job", "cause": Cause.JOB_FAILURE}
        elif isinstance(model, PodStateEntry) and (model.status or "running") in _POD_CAUSES:
            cause = _POD_CAUSES[str(model.status)]
            found = {**base, "kind": "Pod", "cause": cause, "restarts": model.restarts or 0}
        else:
            found = None
        if found is not None:
            faults.append(WorkloadFault(**found))
    return faults


KIND_OF: dict[type[PodTemplateState], str] = {StatefulSetState: "StatefulSet", DaemonSetState: "DaemonSet"}


def as_deployment(entry: PodTemplateState) -> DeploymentState:
    """A workload's pod vocabulary (and health) read as a Deployment's: the causes are the same."""
    shared = entry.model_dump(include={*PodTemplateState.model_fields, "status"}, exclude_unset=True)
    return DeploymentState.model_validate(shared)


def _container_limit(entry: DeploymentState) -> str | None:
    for c in entry.containers or []:
        limit = ((c.resources or {}).get("limits") or {}).get("memory")
        if limit:
            return str(limit)
    return None


def memory_bytes(quantity: str | None) -> int:
    """A memory quantity in bytes (`kubernetes.utils.parse_quantity`: every suffix the API accepts)."""
    if not quantity:
        return 0
    return int(parse_quantity(str(quantity)))  # type: ignore[no-untyped-call]


def _jq_quantity() -> str:
    """jq (kwok's selector language) defining `quantity`: a quantity string as its value, read as
    `kubernetes.utils.parse_quantity` reads it. The suffix table is the client's own (base 1000: n u m k
    M G T P E, base 1024: Ki Mi Gi Ti Pi Ei), so kwok and the operator read every quantity the API
    server accepts alike; the number is jq's (decimals and exponents, `1.5Gi`, `1e3`). Text that is no
    quantity is null (the API server refuses it before kwok sees a pod anyway)."""
    scale = {"": "1"}
    for suffix, exponent in _QUANTITY_EXPONENTS.items():
        scale[suffix] = f"{Decimal(1000) ** exponent}"
        if suffix in _QUANTITY_BINARY:
            scale[f"{suffix}i"] = f"{Decimal(1024) ** exponent}"
    table = ", ".join(f'"{suffix}": {value}' for suffix, value in sorted(scale.items()))
    return (
        'def quantity: (tostring | [capture("^(?<n>[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?)'
        '(?<u>[A-Za-z]*)$")] | first) as $c | if $c == null then null else '
        f"({{{table}}}[$c.u]) as $s | if $s == null then null else ($c.n | tonumber) * $s end end;"
    )


JQ_QUANTITY = _jq_quantity()


def memory_at_most(limit_bytes: int) -> Body:
    """Pods whose main container's memory limit is at most `limit_bytes` (none set: no such limit)."""
    key = (
        f"{JQ_QUANTITY} (.spec.containers[0].resources.limits.memory // null) as $m | "
        f"$m != null and (($m | quantity) as $b | $b != null and $b <= {limit_bytes})"
    )
    return expression(key, "In", ["true"])


def stage_name(env: Environment, fault: WorkloadFault) -> str:
    digest = hashlib.sha256(f"{fault.namespace}/{fault.kind}/{fault.workload}/{fault.cause}".encode())
    return f"{env.prefix}-{env.id}-{digest.hexdigest()[:12]}"


def _pods_of(env: Environment, fault: WorkloadFault) -> list[Body]:
    """Requirements naming the workload's pods: its namespace and its pod labels (a Pod: its name)."""
    namespace = env.sandbox_namespace(fault.namespace) or fault.namespace
    selects = [expression(".metadata.namespace", "In", [namespace])]
    if fault.kind == "Pod":
        return [*selects, expression(".metadata.name", "In", [fault.workload])]
    return [*selects, expression('.metadata.labels["app"]', "In", [fault.workload])]


def fault_stages(
    env: Environment, fault: WorkloadFault, labels: dict[str, str], pods: list[str] | None = None
) -> list[Body]:
    """The Stage of one fault (none for a cause that needs none). `pods`: the names of the workload's
    pods as they are once it is up, for the causes whose Stage names them (`Rule.after_pods`)."""
    rule = RULES[fault.cause]
    if rule.stage is None:
        return []
    selects = _pods_of(env, fault)
    cause = fault.cause
    if cause is Cause.MEMORY_LIMIT and fault.kind != "Pod" and fault.memory_limit:
        selects.append(memory_at_most(memory_bytes(fault.memory_limit)))
    elif cause is Cause.INIT_FAILURE and fault.init_container:
        selects.append(expression(".spec.initContainers[]?.name", "In", [fault.init_container]))
    elif cause is Cause.IMAGE_PULL and fault.image:
        # Only the image that cannot be pulled: another one (`set image`, a rollback) is pulled.
        selects.append(expression(".spec.containers[0].image", "In", [fault.image]))
    elif cause is Cause.ROLLOUT_IN_PROGRESS and fault.image:
        selects.append(expression(".spec.containers[0].image", "In", [fault.image]))
        selects.append(expression(f'.metadata.annotations["{RESTARTED_AT}"]', "DoesNotExist"))
    elif cause is Cause.UNHEALTHY_REPLICA and fault.kind != "Pod":
        if not pods:
            return []
        selects.append(expression(".metadata.name", "In", sorted(pods)[:1]))
    elif cause is Cause.PULL_FAILS_ON_RESTART:
        if pods is None:
            return []
        selects.append(expression(".metadata.name", "NotIn", sorted(pods) or ["-"]))
    template = "oom" if cause is Cause.MEMORY_LIMIT else rule.stage
    return [
        fault_stage(
            stage_name(env, fault),
            template,
            selects,
            labels,
            restarts=fault.restarts or DEFAULT_RESTARTS.get(template, 0),
            init_container=fault.init_container,
        )
    ]
