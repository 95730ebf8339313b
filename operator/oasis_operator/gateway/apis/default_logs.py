"""The log of a container the scenario declares none for: a few ordinary lines that agree with its state.

A running, ready service started, loaded its configuration, listens on its port and answers requests; a
running one that is not ready fails its readiness check; one that exited with an error says so and
gives its exit code; one the kernel killed for memory (OOMKilled) just stops; a run-to-completion
container (a Job's, or one that exited 0, such as an init container) starts, works and finishes. The
lines are timed from the container's own start time in its status. Pure: the pod document in, lines out.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from typing import Any

_STATUS_GROUPS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
_CONTAINER_GROUPS = ("containers", "initContainers", "ephemeralContainers")
_SPACING = timedelta(milliseconds=150)
_DEFAULT_PORT = 8080

Lines = list[tuple[datetime, str]]


def _find(pod: dict[str, Any], groups: tuple[str, ...], section: str, name: str) -> dict[str, Any]:
    holder = pod.get(section) or {}
    for group in groups:
        for item in holder.get(group) or []:
            if isinstance(item, dict) and item.get("name") == name:
                return item
    return {}


def _time(value: Any, fallback: datetime) -> datetime:
    with contextlib.suppress(TypeError, ValueError):
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return fallback


def _version(image: str) -> str:
    """`registry.local/api:1.4.2` → `1.4.2`; an image without a tag (or with a digest) → `latest`."""
    image = image.split("@", 1)[0]
    last = image.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def _port(spec: dict[str, Any]) -> int:
    for port in spec.get("ports") or []:
        if isinstance(port, dict) and isinstance(port.get("containerPort"), int):
            return int(port["containerPort"])
    return _DEFAULT_PORT


def _service_start(name: str, version: str, port: int) -> list[str]:
    return [
        f'level=info msg="starting {name}" version={version}',
        'level=info msg="configuration loaded" source=environment',
        f'level=info msg="listening" addr=0.0.0.0:{port}',
        'level=info msg="ready to serve requests"',
    ]


def _batch_run(name: str, version: str, exit_code: int) -> list[str]:
    lines = [f'level=info msg="starting {name}" version={version}', 'level=info msg="processing"']
    if exit_code == 0:
        return [*lines, 'level=info msg="finished" exit_code=0']
    return [*lines, f'level=error msg="failed" exit_code={exit_code}']


def _run_lines(
    name: str, version: str, port: int, run: dict[str, Any], ready: bool, batch: bool
) -> list[str]:
    """The lines of one run of a container, given its state (`running` or `terminated`)."""
    terminated = run.get("terminated")
    if isinstance(terminated, dict):
        code = int(terminated.get("exitCode") or 0)
        if batch or code == 0:
            return _batch_run(name, version, code)
        if terminated.get("reason") == "OOMKilled":
            return [*_service_start(name, version, port), _request("/", 200, 18)]  # killed mid-work
        start = _service_start(name, version, port)[:2]
        return [*start, f'level=error msg="fatal error, shutting down" exit_code={code}']
    if batch:
        return [f'level=info msg="starting {name}" version={version}', 'level=info msg="processing"']
    lines = _service_start(name, version, port)
    if ready:
        return [*lines, _request("/healthz", 200, 1), _request("/", 200, 12), _request("/healthz", 200, 1)]
    return [*lines, 'level=warn msg="readiness check failed" path=/ready status=503']


def _request(path: str, status: int, millis: int) -> str:
    return f'level=info msg="request served" method=GET path={path} status={status} duration={millis}ms'


def default_log(pod: dict[str, Any], container: str, previous: bool, batch: bool, anchor: datetime) -> Lines:
    """Timestamped lines of `container`'s current run (or its previous one), from its status.

    `batch`: the pod belongs to a Job or CronJob. `anchor`: when a run has no recorded start time.
    """
    spec = _find(pod, _CONTAINER_GROUPS, "spec", container)
    status = _find(pod, _STATUS_GROUPS, "status", container)
    version = _version(str(spec.get("image") or status.get("image") or ""))
    port = _port(spec)
    if previous:
        run = status.get("lastState") or {}
        ready = False
    else:
        run = status.get("state") or {}
        waiting = isinstance(run.get("waiting"), dict)
        if waiting and status.get("lastState"):
            run = status["lastState"]  # between restarts the kubelet serves the last run's log
        elif not status or not run:
            run = {"running": {"startedAt": (pod.get("status") or {}).get("startTime")}}
        ready = bool(status.get("ready")) if status else True
    texts = _run_lines(container, version, port, run, ready, batch)
    detail = next((v for v in run.values() if isinstance(v, dict)), {})
    start = _time(detail.get("startedAt"), anchor - _SPACING * len(texts))
    return [(start + _SPACING * index, text) for index, text in enumerate(texts)]
