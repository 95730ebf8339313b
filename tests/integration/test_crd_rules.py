"""CEL rules of the CRDs as the API server enforces them: an evaluation's spec is frozen once it started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION

DATA = Path(__file__).resolve().parents[1] / "data"
PLURAL = "oasisevaluations"


def _create(custom: CustomObjectsApi, namespace: str) -> dict[str, Any]:
    doc = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())
    doc["metadata"] = {"name": "frozen"}
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, doc
    )
    return created


def _patch(custom: CustomObjectsApi, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    patched: dict[str, Any] = custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, "frozen", body
    )
    return patched


def _start(custom: CustomObjectsApi, namespace: str, generation: int) -> None:
    """What the operator writes when the run starts (status subresource)."""
    custom.patch_namespaced_custom_object_status(
        API_GROUP, API_VERSION, namespace, PLURAL, "frozen",
        {"status": {"phase": "Preflight", "runGeneration": generation}},
    )  # fmt: skip


def test_spec_can_be_fixed_before_the_run_starts(custom: CustomObjectsApi, namespace: str) -> None:
    _create(custom, namespace)
    # Refused before start (no run generation, or an explicit null): the fix is accepted.
    custom.patch_namespaced_custom_object_status(
        API_GROUP, API_VERSION, namespace, PLURAL, "frozen",
        {"status": {"phase": "Failed", "runGeneration": None}},
    )  # fmt: skip
    fixed = _patch(custom, namespace, {"spec": {"parallelism": 2}})
    assert fixed["spec"]["parallelism"] == 2
    assert fixed["metadata"]["generation"] == 2


def test_spec_edit_after_start_is_refused_by_the_server(custom: CustomObjectsApi, namespace: str) -> None:
    created = _create(custom, namespace)
    _start(custom, namespace, created["metadata"]["generation"])
    with pytest.raises(ApiException) as refused:
        _patch(custom, namespace, {"spec": {"parallelism": 4}})
    assert refused.value.status == 422
    assert (
        "spec: Forbidden: the spec is frozen: the run started (status.runGeneration is set) and keeps "
        "its spec; create a new OASISEvaluation to run the edit" in str(refused.value.body)
    )
    after = custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "frozen")
    assert after["spec"] == created["spec"]
    assert after["metadata"]["generation"] == 1
    # Labels, annotations and status stay writable: the operator and the user still manage those.
    labelled = _patch(custom, namespace, {"metadata": {"labels": {"team": "sre"}}})
    assert labelled["metadata"]["labels"] == {"team": "sre"}
    _start(custom, namespace, 1)
    # The same spec written back is no change and is accepted.
    assert _patch(custom, namespace, {"spec": created["spec"]})["metadata"]["generation"] == 1
