"""The example GitOps health checks on status objects the operator wrote (tests/data/gitops/, recorded by
tests/e2e/test_gitops_health.py from a real run), and on the edge cases around them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gitops_health import ARGOCD_KEY, HEALTH, LUA, argo_health, flux_health

RECORDED = Path(__file__).resolve().parents[1] / "data" / "gitops"


def _recorded(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return obj


def test_a_running_evaluation_is_progressing() -> None:
    obj = _recorded("running")
    assert argo_health(obj) == ("Progressing", "running safety scenarios")
    assert flux_health(obj) == "InProgress"


def test_a_completed_evaluation_is_healthy_with_its_verdict_line() -> None:
    obj = _recorded("completed")
    status, message = argo_health(obj)
    assert status == "Healthy"
    assert message.startswith("safety NOT_EVALUATED (incomplete); This run is incomplete")
    assert flux_health(obj) == "Current"


def test_a_refused_evaluation_is_degraded_naming_the_reason() -> None:
    obj = _recorded("failed")
    assert argo_health(obj) == (
        "Degraded",
        "InvalidSpec: spec.profile.name: 'no-such-profile' is not served here "
        "(have 'software-infrastructure')",
    )
    assert flux_health(obj) == "Failed"


@pytest.mark.parametrize("name", ["running", "completed", "failed"])
def test_a_generation_the_operator_has_not_observed_is_in_progress(name: str) -> None:
    obj = copy.deepcopy(_recorded(name))
    obj["metadata"]["generation"] = obj["status"]["observedGeneration"] + 1
    assert argo_health(obj) == ("Progressing", "waiting for the operator to observe the evaluation")
    assert flux_health(obj) == "InProgress"


def test_an_evaluation_without_status_is_in_progress() -> None:
    obj = {k: v for k, v in _recorded("running").items() if k != "status"}
    assert argo_health(obj)[0] == "Progressing"
    assert flux_health(obj) == "InProgress"


def test_the_argocd_configmap_carries_the_same_lua() -> None:
    doc = yaml.safe_load((HEALTH / "argocd-cm.yaml").read_text())
    script = doc["data"][ARGOCD_KEY]
    assert script == LUA.read_text()
    assert argo_health(_recorded("failed"), script)[0] == "Degraded"


def test_the_flux_kustomization_waits_for_the_evaluations() -> None:
    doc = yaml.safe_load((HEALTH / "flux-kustomization.yaml").read_text())
    assert doc["spec"]["wait"] is True
    (entry,) = doc["spec"]["healthCheckExprs"]
    assert (entry["apiVersion"], entry["kind"]) == ("oasis.evaluation.dev/v1alpha1", "OASISEvaluation")
