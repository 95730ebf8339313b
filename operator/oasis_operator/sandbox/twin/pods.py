"""Pod status for each declared health state, written as the kubelet would have reported it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from oasis_operator.sandbox.twin.plan import Body, TwinContext


@dataclass(frozen=True)
class PodHealth:
    """How one pod looks: the declared state resolved for this replica."""

    state: str
    ready: bool
    restarts: int = 0
    reason: str | None = None  # scheduling reason for pending pods
    init_failed: bool = False


def _digest(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def pod_ip(seed: str) -> str:
    raw = int(_digest(seed)[:6], 16)
    return f"10.244.{(raw >> 8) % 250 + 1}.{raw % 250 + 2}"


def _container_status(
    ctx: TwinContext, pod: str, container: dict[str, Any], health: PodHealth, started: str
) -> Body:
    name = container["name"]
    status: Body = {
        "name": name,
        "image": container["image"],
        "imageID": f"{container['image'].split(':')[0]}@sha256:{_digest(container['image'])}",
        "containerID": f"containerd://{_digest(ctx.env_id + pod + name)}",
        "restartCount": health.restarts,
        "ready": health.ready,
        "started": health.ready,
    }
    last_finish = ctx.ago(timedelta(seconds=40))
    last_start = ctx.ago(timedelta(seconds=55))
    if health.init_failed:
        status.pop("containerID")
        status["state"] = {"waiting": {"reason": "PodInitializing"}}
        status["restartCount"] = 0
        return status
    if health.state == "CrashLoopBackOff" or (health.state == "error" and health.restarts):
        status["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 5m0s restarting failed container={name} pod={pod}",
            }
        }
        status["lastState"] = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": last_start,
                "finishedAt": last_finish,
            }
        }
    elif health.state == "OOMKilled":
        status["state"] = {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": last_start,
                "finishedAt": last_finish,
            }
        }
        status["lastState"] = dict(status["state"])
    elif health.state == "error":
        status["state"] = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": last_start,
                "finishedAt": last_finish,
            }
        }
    elif health.state == "ImagePullBackOff":
        status.pop("containerID")
        status["state"] = {
            "waiting": {
                "reason": "ImagePullBackOff",
                "message": f'Back-off pulling image "{container["image"]}"',
            }
        }
    elif health.state == "pending":
        status.pop("containerID")
        status["state"] = {"waiting": {"reason": "ContainerCreating"}}
    else:
        status["state"] = {"running": {"startedAt": started}}
        if health.restarts:
            status["lastState"] = {
                "terminated": {
                    "exitCode": 1,
                    "reason": "Error",
                    "startedAt": last_start,
                    "finishedAt": last_finish,
                }
            }
    return status


def _init_status(ctx: TwinContext, pod: str, container: dict[str, Any], health: PodHealth) -> Body:
    base = _container_status(ctx, pod, container, PodHealth("running", ready=True), ctx.timestamp)
    if container.get("restartPolicy") == "Always":  # a native sidecar: started, and running still
        return base
    if not health.init_failed:
        base["state"] = {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": ctx.ago(timedelta(hours=1)),
                "finishedAt": ctx.ago(timedelta(minutes=59)),
            }
        }
        base["ready"] = True
        return base
    finished = ctx.ago(timedelta(seconds=30))
    base.update(
        ready=False,
        started=False,
        restartCount=health.restarts or 4,
        state={
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 2m40s restarting failed container={container['name']} pod={pod}",
            }
        },
        lastState={
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": ctx.ago(timedelta(seconds=33)),
                "finishedAt": finished,
            }
        },
    )
    return base


def pod_status(
    ctx: TwinContext, pod: str, spec: Body, health: PodHealth, node: str | None, started_ago: timedelta
) -> Body:
    """The `status` of a twin Pod in the declared health state.

    `qosClass` is left to the API server, which derives it from the resources at creation (from 1.3x it
    refuses any other value).
    """
    started = ctx.ago(started_ago)
    scheduled = health.state != "pending" and node is not None
    conditions: list[Body] = [
        {"type": "PodScheduled", "status": "True" if scheduled else "False", "lastTransitionTime": started}
    ]
    if not scheduled:
        conditions[0].update(reason="Unschedulable", message=health.reason or "0/3 nodes are available.")
        return {"phase": "Pending", "conditions": conditions}
    initialized = not health.init_failed
    containers_ready = health.ready and initialized
    conditions += [
        {"type": "Initialized", "status": str(initialized), "lastTransitionTime": started},
        {"type": "ContainersReady", "status": str(containers_ready), "lastTransitionTime": started},
        {"type": "Ready", "status": str(containers_ready), "lastTransitionTime": started},
    ]
    for cond in conditions[1:]:
        if cond["status"] == "False":
            cond["reason"] = "PodNotInitialized" if not initialized else "ContainersNotReady"
    status: Body = {
        "phase": "Pending" if health.init_failed else "Running",
        "conditions": conditions,
        "hostIP": pod_ip(node or ""),
        "podIP": pod_ip(ctx.env_id + pod),
        "podIPs": [{"ip": pod_ip(ctx.env_id + pod)}],
        "startTime": started,
        "containerStatuses": [_container_status(ctx, pod, c, health, started) for c in spec["containers"]],
    }
    if spec.get("initContainers"):
        status["initContainerStatuses"] = [_init_status(ctx, pod, c, health) for c in spec["initContainers"]]
    return status
