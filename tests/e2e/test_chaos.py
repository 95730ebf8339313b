"""Chaos: the API server, the agent and the operator stop and come back at random points of short runs.

Seeded and bounded: each round starts a two-scenario evaluation, waits a random moment, injects one
fault (API server down for a few seconds, the operator killed and restarted, or the agent's processes
killed) and follows the run to its end. Every run must end in a documented terminal state, leave no
sandbox and no agent process behind, and never run a finished scenario again.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator.kube import reconnect
from tests.cluster_fixtures import Cluster
from tests.e2e.support import (
    OperatorProcess,
    agent_command,
    condition,
    create,
    environments_of,
    evaluation,
    get,
    processes_with_marker,
    unique,
)

SEED = int(os.environ.get("OASIS_CHAOS_SEED", "1616"))
ROUNDS = int(os.environ.get("OASIS_CHAOS_ROUNDS", "3"))
FAULTS = ("apiserver", "operator", "agent")
IDS = ["infra.safety.be.zone-violation-001", "infra.safety.de.direct-secret-request-001"]
# The documented ends of a run: (phase, Ready reason) pairs a user can read and act on.
DOCUMENTED = {
    ("Completed", "VerdictReady"),
    ("Completed", "VerdictIncomplete"),
    ("Completed", "NotEvaluated"),
    ("Aborted", "Aborted"),
    ("Failed", "AgentUnreachable"),
}
T = TypeVar("T")


def _tolerant(api: ApiClient, call: Callable[[], T], timeout: float = 180) -> T:
    """`call`, retried while the API server is away (following its kubeconfig if it moved)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except Exception:
            if time.monotonic() > deadline:
                raise
            reconnect(api)
            time.sleep(1)


def _finished(obj: dict[str, Any]) -> dict[str, str]:
    return {
        r["id"]: r["finishedAt"] for r in obj.get("status", {}).get("scenarios", []) if r.get("finishedAt")
    }


def _inject(
    fault: str, cluster: Cluster, operator: OperatorProcess, marker: str, rng: random.Random, api: ApiClient
) -> None:
    if fault == "apiserver":
        assert cluster.plane is not None
        cluster.plane.stop()
        time.sleep(rng.uniform(2, 8))
        cluster.plane.start()
        reconnect(api)  # the test's own client follows the kubeconfig as the operator's do
    elif fault == "operator":
        operator.stop(signal.SIGKILL)
        time.sleep(rng.uniform(1, 4))
        operator.start()
    else:
        for pid in processes_with_marker(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_faults_at_random_points_end_cleanly(
    cluster: Cluster, api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    if cluster.plane is None:
        pytest.skip("needs the local control plane to stop and start the API server")
    rng = random.Random(SEED)  # noqa: S311 - a reproducible test schedule, not a secret
    ends = []
    for round_ in range(ROUNDS):
        name, marker = f"chaos-{round_}", unique("chaos")
        fault = FAULTS[round_ % len(FAULTS)] if round_ < len(FAULTS) else rng.choice(FAULTS)
        create(custom, namespace, evaluation(name, agent_command("careful", marker), scenarios={"ids": IDS}))
        time.sleep(rng.uniform(3, 25))
        before = _finished(_tolerant(api, lambda n=name: get(custom, namespace, n)))  # type: ignore[misc]
        _inject(fault, cluster, operator, marker, rng, api)

        def ended(n: str = name) -> dict[str, Any] | None:
            obj = get(custom, namespace, n)
            return obj if obj.get("status", {}).get("phase") in {"Completed", "Aborted", "Failed"} else None

        deadline = time.monotonic() + 420
        obj = None
        while obj is None and time.monotonic() < deadline:
            obj = _tolerant(api, ended)
            if obj is None:
                time.sleep(2)
        assert obj is not None, f"round {round_} ({fault}): {name} never reached a terminal phase"
        status = obj["status"]
        ready = condition(obj, "Ready") or {}
        end = (status["phase"], ready.get("reason"))
        ends.append((fault, end))
        assert end in DOCUMENTED, (fault, end, ready.get("message"))
        if status["phase"] == "Aborted":
            assert status["summary"]["aborted"] is True
        after = _finished(obj)
        assert {k: after.get(k) for k in before} == before, (
            f"round {round_} ({fault}): a finished row ran again"
        )
        assert _tolerant(api, lambda n=name: environments_of(api, namespace, n)) == []  # type: ignore[misc]
        assert processes_with_marker(marker) == []
    assert len(ends) == ROUNDS, ends
