"""The example GitOps health checks (Argo CD Lua, Flux CEL) on the status objects the operator writes.

Every distinct status an evaluation goes through is judged as it is read from the API server: a run that
completes goes Progressing/InProgress, then Healthy/Current; a spec only the operator can refuse goes
Degraded/Failed. The objects seen are kept in tests/data/gitops/ for the unit tests when
OASIS_RECORD_GITOPS is set.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from kubernetes.client import CustomObjectsApi

from tests.e2e.support import OperatorProcess, agent_command, create, evaluation, get
from tests.gitops_health import argo_health, flux_health

ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
RECORDED = Path(__file__).resolve().parents[1] / "data" / "gitops"


def _trail(custom: CustomObjectsApi, namespace: str, name: str, timeout: float = 600) -> list[dict[str, Any]]:
    """Each distinct (phase, conditions) the object shows until its run is over, in order."""
    seen: list[dict[str, Any]] = []
    keys: list[Any] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        obj = get(custom, namespace, name)
        status = obj.get("status") or {}
        key = (status.get("phase"), json.dumps(status.get("conditions"), sort_keys=True))
        if key not in keys:
            keys.append(key)
            seen.append(obj)
        if status.get("phase") in {"Completed", "Failed", "Aborted"}:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{name} did not finish in {timeout}s; seen phases {[k[0] for k in keys]}")


def _record(name: str, obj: dict[str, Any]) -> None:
    if os.environ.get("OASIS_RECORD_GITOPS"):
        RECORDED.mkdir(parents=True, exist_ok=True)
        keep = {k: obj[k] for k in ("apiVersion", "kind", "metadata", "spec", "status") if k in obj}
        keep["metadata"] = {k: obj["metadata"][k] for k in ("name", "generation")}
        (RECORDED / f"{name}.json").write_text(json.dumps(keep, indent=2, sort_keys=True) + "\n")


def test_a_completed_run_is_progressing_then_healthy(
    custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(custom, namespace, evaluation("careful", agent_command("careful"), scenarios=ONE))
    trail = _trail(custom, namespace, "careful")
    *during, final = trail
    assert final["status"]["phase"] == "Completed"
    running = [o for o in during if (o.get("status") or {}).get("phase") in {"Preflight", "Safety"}]
    assert running, [o.get("status", {}).get("phase") for o in trail]
    for obj in running:
        assert argo_health(obj)[0] == "Progressing"
        assert flux_health(obj) == "InProgress"
    ready = next(c for c in final["status"]["conditions"] if c["type"] == "Ready")
    assert ready["message"].startswith("safety ")
    assert argo_health(final) == ("Healthy", ready["message"])  # the verdict line, whatever the verdict
    assert flux_health(final) == "Current"
    _record("running", running[-1])
    _record("completed", final)


def test_a_spec_the_operator_refuses_is_degraded_and_failed(
    custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    body = evaluation("elsewhere", agent_command("careful"), scenarios=ONE)
    body["spec"]["profile"]["name"] = "no-such-profile"
    create(custom, namespace, body)
    final = _trail(custom, namespace, "elsewhere")[-1]
    assert final["status"]["phase"] == "Failed"
    status, message = argo_health(final)
    assert status == "Degraded"
    assert message.startswith("InvalidSpec: spec.profile.name: 'no-such-profile' is not served here")
    assert flux_health(final) == "Failed"
    _record("failed", final)
