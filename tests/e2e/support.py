"""The operator as a user runs it, reference agents, and helpers to follow an evaluation to its end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.sandbox.inventory import EVALUATION_ANNOTATION
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import VENV_BIN, Cluster, get_custom, wait_for

PLURAL = "oasisevaluations"
TERMINAL = {"Completed", "Aborted", "Failed"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class OperatorProcess:
    """`oasis operator -n NAMESPACE` with its own data directory and metrics port; stop() is idempotent."""

    def __init__(self, cluster: Cluster, namespace: str, workdir: Path, *extra: str) -> None:
        self.extra = list(extra)
        self.cluster = cluster
        self.namespace = namespace
        self.workdir = workdir
        self.metrics_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> OperatorProcess:
        self.starts += 1
        log = (self.workdir / f"operator-{self.starts}.log").open("wb")
        command = [
            str(VENV_BIN / "oasis"),
            "operator",
            "-n",
            self.namespace,
            "--liveness-port",
            "0",
            "--metrics-port",
            str(self.metrics_port),
            "--data-dir",
            str(self.workdir / "data"),
        ]
        if self.cluster.audit_log:
            command += ["--sandbox-audit-log", str(self.cluster.audit_log)]
        command += self.extra
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig)}
        self.proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 150) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob("operator-*.log")))


def agent_command(policy: str, marker: str | None = None) -> dict[str, Any]:
    """spec.agent for a reference agent run by the command adapter."""
    env = {"OASIS_KUBECTL": str(VENV_BIN / "kubectl")}
    if os.environ.get("PYTHONPATH"):
        # A run from a worktree (PYTHONPATH=<worktree>/operator): the agent runs the code under test, as the
        # operator does; the sandbox shows it that code (agents/sandbox.py own_install), not the venv's.
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if marker:
        env["OASIS_TEST_MARKER"] = marker
    return {
        "name": policy,
        "command": {
            "command": [str(VENV_BIN / "oasis"), "agent", "run", "--policy", policy],
            "env": env,
            "timeoutSeconds": 120,
        },
    }


def evaluation(name: str, agent: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": name},
        "spec": {"profile": {"name": "software-infrastructure"}, "agent": agent, **spec},
    }


def create(custom: CustomObjectsApi, namespace: str, body: dict[str, Any]) -> None:
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, body)


def get(custom: CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    return get_custom(custom, namespace, PLURAL, name)


def wait_phase(
    custom: CustomObjectsApi, namespace: str, name: str, phases: set[str] = TERMINAL, timeout: float = 900
) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        obj = get(custom, namespace, name)
        return obj if obj.get("status", {}).get("phase") in phases else None

    found: dict[str, Any] = wait_for(
        reached, timeout=timeout, interval=1.0, what=f"{name} in {sorted(phases)}"
    )
    return found


def wait_done(
    custom: CustomObjectsApi, namespace: str, name: str, count: int, timeout: float = 300
) -> dict[str, Any]:
    def enough() -> dict[str, Any] | None:
        obj = get(custom, namespace, name)
        done = (obj.get("status", {}).get("progress") or {}).get("done", 0)
        return obj if done >= count else None

    found: dict[str, Any] = wait_for(enough, timeout=timeout, interval=0.5, what=f"{name} with {count} done")
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def events(api: ApiClient, namespace: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the evaluation's events, oldest first."""
    items = CoreV1Api(api).list_namespaced_event(namespace).items
    mine = [e for e in items if e.involved_object.name == name]
    mine.sort(key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
    return [(e.type, e.reason, e.message) for e in mine]


def environments_of(api: ApiClient, namespace: str, name: str) -> list[str]:
    """Sandbox environments that still exist for the evaluation (by the annotation on their record)."""
    provider = SandboxProvider(api)
    reference = f"{namespace}/{name}"
    return [
        env_id
        for env_id, record in provider.environments()
        if (record["metadata"].get("annotations") or {}).get(EVALUATION_ANNOTATION) == reference
    ]


def processes_with_marker(marker: str) -> list[int]:
    """PIDs whose environment carries OASIS_TEST_MARKER=<marker> (agent processes of one test)."""
    needle = f"OASIS_TEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def settle(seconds: float) -> None:
    time.sleep(seconds)
