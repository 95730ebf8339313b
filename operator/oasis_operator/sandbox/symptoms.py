"""Is each declared workload in its declared state yet? Read from the live Deployment and its Pods.

At provisioning the provider creates the twin and lets the controllers, the scheduler and kwok play it;
the agent starts only once every declared symptom is present (`SandboxProvider.provision`). That is also
the standard's counterfactual check in its constructive direction: the declared deviation (a missing
key, a low limit, requests no node fits) is what produces the symptom the scenario describes; a symptom
that does not appear is a scenario (or world) error, named with what was seen instead.

Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oasis_operator.models.declared_parse import ParsedState, split_resource
from oasis_operator.models.declared_state import DeploymentState, PodStateEntry
from oasis_operator.models.declared_workloads import DaemonSetState, JobState, StatefulSetState
from oasis_operator.sandbox.twin.workloads import default_image

Body = dict[str, Any]
HEALTHY = frozenset({"running", "elevated_error_rate"})
CRASHING = frozenset({"CrashLoopBackOff", "error", "OOMKilled"})
# The states whose pods never become Ready (a crash-looping container is Ready between its crashes).
NEVER_READY = frozenset({"pending", "ImagePullBackOff", "rolling_update_in_progress"})


@dataclass(frozen=True)
class Expectation:
    """One declared workload (or pod) and the state it must show before the agent starts."""

    kind: str  # "Deployment", "StatefulSet", "DaemonSet", "Job" or "Pod"
    namespace: str  # declared
    name: str
    state: str
    replicas: int = 1
    image: str | None = None  # the declared current release (a rollout in progress is stuck on it)
    init_failure: bool = False
    waits_for_stage: bool = False  # healthy first; its fault's Stage comes once its pods exist

    @property
    def label(self) -> str:
        return f"{self.kind.lower()}/{self.name} in namespace {self.namespace}"


def expectations(parsed: ParsedState, after_pods: set[tuple[str, str]]) -> list[Expectation]:
    """What each declared Deployment and Pod must show; `after_pods`: (namespace, name) of the
    workloads whose fault's Stage is created once their pods exist (they must be healthy first)."""
    found = []
    for entry, model in parsed.entries:
        name = split_resource(entry.resource)[1]
        namespace = model.namespace or "default"
        if isinstance(model, DeploymentState):
            state = model.status or "running"
            default = 3 if state == "rolling_update_in_progress" else 1
            replicas = model.replicas if model.replicas is not None else default
            image = model.current_image or model.image or default_image(name)
            found.append(
                Expectation(
                    "Deployment",
                    namespace,
                    name,
                    state,
                    replicas,
                    str(image),
                    init_failure=any(c.status == "error" for c in model.init_containers or []),
                    waits_for_stage=(namespace, name) in after_pods,
                )
            )
        elif isinstance(model, StatefulSetState | DaemonSetState):
            kind = "StatefulSet" if isinstance(model, StatefulSetState) else "DaemonSet"
            declared: int | None = getattr(model, "replicas", None)
            state = model.status or "running"
            init_failure = any(c.status == "error" for c in model.init_containers or [])
            replicas = declared if declared is not None else (1 if kind == "StatefulSet" else 0)
            late = (namespace, name) in after_pods
            ordered = isinstance(model, StatefulSetState) and model.pod_management_policy != "Parallel"
            if ordered and not late and (init_failure or state in NEVER_READY):
                # Made in order, the next pod only once the one before is Ready: the first never is.
                replicas = min(replicas, 1)
            found.append(
                Expectation(
                    kind, namespace, name, state, replicas, init_failure=init_failure, waits_for_stage=late
                )
            )
        elif isinstance(model, JobState):
            found.append(Expectation("Job", namespace, name, model.status or "running"))
        elif isinstance(model, PodStateEntry):
            found.append(Expectation("Pod", namespace, name, model.status or "running"))
    return found


def _conditions(pod: Body) -> dict[str, str]:
    return {
        str(c.get("type")): str(c.get("status")) for c in (pod.get("status") or {}).get("conditions") or []
    }


def _main(pod: Body) -> Body:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else {}


def pod_state(pod: Body) -> str:
    """A pod's state in the words `kubectl get pods` uses (Running, Pending, CrashLoopBackOff, ...)."""
    status = pod.get("status") or {}
    for init in status.get("initContainerStatuses") or []:
        reason = ((init.get("state") or {}).get("waiting") or {}).get("reason")
        if reason and reason != "PodInitializing":
            return f"Init:{reason}"
    main = _main(pod)
    waiting = ((main.get("state") or {}).get("waiting") or {}).get("reason")
    if waiting:
        return str(waiting)
    if _conditions(pod).get("PodScheduled") == "False":
        return "Pending (unschedulable)"
    phase = str(status.get("phase") or "Pending")
    if phase == "Running" and _conditions(pod).get("Ready") != "True":
        return "Running (not ready)"
    return phase


def _crashed(pod: Body) -> bool:
    main = _main(pod)
    waiting = ((main.get("state") or {}).get("waiting") or {}).get("reason")
    return waiting == "CrashLoopBackOff" or bool((main.get("lastState") or {}).get("terminated"))


def _ready(pod: Body) -> bool:
    return _conditions(pod).get("Ready") == "True"


def _image(pod: Body) -> str | None:
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0].get("image")) if containers else None


def _workload_up(kind: str, workload: Body | None, replicas: int) -> bool:
    """The controller observed the workload and all its pods are available (a DaemonSet: on every
    node it selects)."""
    if workload is None:
        return False
    status = workload.get("status") or {}
    if status.get("observedGeneration") != workload["metadata"].get("generation"):
        return False
    if kind == "DaemonSet":
        wanted = status.get("desiredNumberScheduled", 0)
        return bool(wanted) and status.get("numberAvailable", 0) == wanted
    if kind == "StatefulSet":
        return bool(status.get("availableReplicas", 0) == status.get("replicas", 0) == replicas)
    counts = (status.get("updatedReplicas", 0), status.get("availableReplicas", 0), status.get("replicas", 0))
    return counts == (replicas, replicas, replicas)


def _job_shows(state: str, job: Body | None, pods: list[Body]) -> bool:
    status = (job or {}).get("status") or {}
    if state == "complete":
        return any(
            c.get("type") == "Complete" and c.get("status") == "True" for c in status.get("conditions") or []
        )
    if state == "failed":
        return bool(status.get("failed", 0)) or any(
            (p.get("status") or {}).get("phase") == "Failed" for p in pods
        )
    return bool(pods) or bool(status.get("succeeded", 0))


def missing(expect: Expectation, deployment: Body | None, pods: list[Body]) -> str | None:
    """None when the workload shows its declared state; otherwise what it shows instead.

    `deployment`: the live workload object (any kind; None for a Pod declared on its own)."""
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    current = [p for p in live if expect.image is None or _image(p) == expect.image]
    state = "running" if expect.waits_for_stage else expect.state
    if expect.kind == "Job":
        shown = _job_shows(state, deployment, live)
    elif expect.kind != "Pod":
        replicas = expect.replicas
        if expect.kind == "DaemonSet":
            replicas = int(((deployment or {}).get("status") or {}).get("desiredNumberScheduled", 0)) or 1
        # A failing init container decides the pods' state whatever status is declared (none is:
        # running): they never get past it, so the workload is never up.
        if expect.init_failure and not expect.waits_for_stage:
            shown = len(current) >= replicas and all(pod_state(p).startswith("Init:") for p in current)
        elif state in HEALTHY:
            shown = _workload_up(expect.kind, deployment, expect.replicas)
        elif state in CRASHING:
            shown = len(current) >= replicas and all(_crashed(p) for p in current)
        elif state == "pending":
            shown = len(live) >= replicas and all(_conditions(p).get("PodScheduled") == "False" for p in live)
        elif state == "degraded":
            shown = len(live) >= replicas and any(not _ready(p) for p in live)
        elif state == "rolling_update_in_progress":
            stuck = [p for p in current if pod_state(p) == "Running (not ready)"]
            shown = bool(stuck) and any(_ready(p) for p in live if p not in current)
        elif state == "ImagePullBackOff":
            shown = bool(current) and all(pod_state(p) == "ImagePullBackOff" for p in current)
        else:
            shown = True
    else:
        pod = live[0] if live else None
        seen = pod_state(pod) if pod is not None else "absent"
        wanted = {
            "running": ("Running",),
            "elevated_error_rate": ("Running",),
            "CrashLoopBackOff": ("CrashLoopBackOff",),
            "error": ("CrashLoopBackOff",),
            "OOMKilled": ("CrashLoopBackOff",),
            "ImagePullBackOff": ("ImagePullBackOff",),
            "pending": ("Pending (unschedulable)",),
            "degraded": ("Running (not ready)",),
            "rolling_update_in_progress": ("Running (not ready)",),
        }.get(state, (seen,))
        shown = seen in wanted
    if shown:
        return None
    seen_states = sorted({pod_state(p) for p in live}) or ["no pods"]
    return f"{expect.label}: declared {expect.state}, its pods show {', '.join(seen_states)}"


# The taints the node lifecycle controller keeps in step with a node's conditions.
PRESSURE_TAINTS = {
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
}
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
CONDITION_TAINTS = frozenset({*PRESSURE_TAINTS.values(), NOT_READY_TAINT, UNREACHABLE_TAINT})


def implied_taints(node: Body) -> frozenset[str]:
    """The condition taint keys a node's conditions imply."""
    conditions = _conditions(node)
    keys = {taint for condition, taint in PRESSURE_TAINTS.items() if conditions.get(condition) == "True"}
    ready = conditions.get("Ready", "Unknown")
    if ready == "False":
        keys.add(NOT_READY_TAINT)
    elif ready != "True":
        keys.add(UNREACHABLE_TAINT)
    return frozenset(keys)


def condition_taints(node: Body) -> frozenset[str]:
    """The condition taint keys a node carries."""
    taints = (node.get("spec") or {}).get("taints") or []
    return frozenset(str(t.get("key")) for t in taints if t.get("key") in CONDITION_TAINTS)
