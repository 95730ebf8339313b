"""CEL rules of the CRDs as the API server enforces them: an evaluation's spec is frozen once it started
(but for `spec.suspend`)."""

from __future__ import annotations

import json
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
        "its spec (only spec.suspend may change); create a new OASISEvaluation to run the edit"
        in str(refused.value.body)
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


def test_suspend_alone_may_change_after_start_and_with_it_nothing_else(
    custom: CustomObjectsApi, namespace: str
) -> None:
    created = _create(custom, namespace)
    _start(custom, namespace, created["metadata"]["generation"])
    held = _patch(custom, namespace, {"spec": {"suspend": True}})
    assert held["spec"]["suspend"] is True
    assert held["metadata"]["generation"] == 2
    resumed = _patch(custom, namespace, {"spec": {"suspend": False}})
    assert resumed["spec"]["suspend"] is False
    # Removing it is a change of suspend alone too.
    assert "suspend" not in _patch(custom, namespace, {"spec": {"suspend": None}})["spec"]
    for edit in (
        {"suspend": True, "tier": 2},
        {"scenarios": {"ids": ["infra.safety.*"]}},
        {"mutation": {"seed": 1}},
    ):
        with pytest.raises(ApiException) as refused:
            _patch(custom, namespace, {"spec": edit})
        assert refused.value.status == 422
        assert "the spec is frozen" in str(refused.value.body)
    after = custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "frozen")
    assert {k: v for k, v in after["spec"].items() if k != "suspend"} == created["spec"]


# --- the models' cross-field rules, as CEL the server enforces at apply time --------------------------
def _evaluation(name: str, **spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())
    doc["metadata"] = {"name": name}
    doc["spec"].update(spec)
    return doc


def _refusal(custom: CustomObjectsApi, namespace: str, plural: str, doc: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, plural, doc)
    assert refused.value.status == 422
    return str(refused.value.body)


@pytest.mark.parametrize(
    "agent",
    [
        {"name": "none-given"},
        {"http": {"url": "http://a:1"}, "job": {"image": "agent:1"}},
        {"http": {"url": "http://a:1"}, "command": {"command": ["agent"]}, "job": {"image": "agent:1"}},
        {"http": None, "command": None},
    ],
    ids=["none", "http-and-job", "all-three", "explicit-nulls"],
)
def test_server_refuses_an_agent_without_exactly_one_kind(
    custom: CustomObjectsApi, namespace: str, agent: dict[str, Any]
) -> None:
    body = _refusal(custom, namespace, PLURAL, _evaluation("two-agents", agent=agent))
    assert "spec.agent: Invalid value" in body
    assert "set exactly one of agent.http, agent.command, agent.job" in body


@pytest.mark.parametrize("path", ["relative/dir", "/", "//", "/opt/../etc", "/opt/.."])
def test_server_refuses_a_read_only_path_that_is_not_a_plain_absolute_path(
    custom: CustomObjectsApi, namespace: str, path: str
) -> None:
    agent = {"command": {"command": ["agent"], "readOnlyPaths": ["/opt/agent", path]}}
    body = _refusal(custom, namespace, PLURAL, _evaluation("paths", agent=agent))
    assert "spec.agent.command.readOnlyPaths: Invalid value" in body
    assert "every path must be absolute, other than '/', and without '..'" in body


def test_server_accepts_plain_absolute_read_only_paths(custom: CustomObjectsApi, namespace: str) -> None:
    agent = {"command": {"command": ["agent"], "readOnlyPaths": ["/opt/agent", "/usr/share/agent/"]}}
    created = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, _evaluation("paths", agent=agent)
    )
    assert created["spec"]["agent"]["command"]["readOnlyPaths"] == ["/opt/agent", "/usr/share/agent/"]


@pytest.mark.parametrize(
    "expression",
    [
        {"key": "team", "operator": "In"},
        {"key": "team", "operator": "NotIn", "values": []},
        {"key": "team", "operator": "Exists", "values": ["sre"]},
        {"key": "team", "operator": "DoesNotExist", "values": ["sre"]},
    ],
    ids=["in-without-values", "notin-empty", "exists-with-values", "doesnotexist-with-values"],
)
def test_server_refuses_a_selector_expression_whose_values_do_not_fit_its_operator(
    custom: CustomObjectsApi, namespace: str, expression: dict[str, Any]
) -> None:
    scenarios = {"selector": {"matchExpressions": [expression]}}
    body = _refusal(custom, namespace, PLURAL, _evaluation("selector", scenarios=scenarios))
    assert "spec.scenarios.selector.matchExpressions[0].values: Invalid value" in body
    assert "operator In and NotIn need at least one value; Exists and DoesNotExist take none" in body


@pytest.mark.parametrize("entry", [{}, {"forbidden": ""}, {"required": "", "description": ""}])
def test_server_refuses_an_api_audit_entry_that_checks_nothing(
    custom: CustomObjectsApi, namespace: str, entry: dict[str, Any]
) -> None:
    doc = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())
    doc["spec"]["verification"]["api_audit"] = [{"forbidden": "DELETE pods"}, entry]
    body = _refusal(custom, namespace, "scenarios", doc)
    assert "spec.verification.api_audit[1]: Invalid value" in body
    assert "an api_audit entry checks nothing" in body


def test_conditions_are_a_map_keyed_by_type(custom: CustomObjectsApi, namespace: str) -> None:
    _create(custom, namespace)
    condition = {
        "type": "Ready",
        "status": "False",
        "reason": "Running",
        "lastTransitionTime": "2026-12-03T21:00:00Z",
    }
    with pytest.raises(ApiException) as refused:
        custom.patch_namespaced_custom_object_status(
            API_GROUP, API_VERSION, namespace, PLURAL, "frozen",
            {"status": {"conditions": [condition, {**condition, "status": "True"}]}},
        )  # fmt: skip
    assert refused.value.status == 422
    cause = json.loads(refused.value.body)["details"]["causes"][0]
    assert cause == {
        "reason": "FieldValueDuplicate",
        "message": 'Duplicate value: {"type":"Ready"}',
        "field": "status.conditions[1]",
    }


def test_managed_by_cannot_be_added_changed_or_removed_and_must_be_a_domain_path(
    custom: CustomObjectsApi, namespace: str
) -> None:
    doc = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())
    doc["metadata"] = {"name": "frozen"}
    doc["spec"]["managedBy"] = "not a controller"
    with pytest.raises(ApiException) as bad:
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, doc)
    assert bad.value.status == 422
    assert "spec.managedBy" in json.loads(bad.value.body)["message"]

    doc["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, doc)
    for change in ({"spec": {"managedBy": "example.com/other"}}, {"spec": {"managedBy": None}}):
        with pytest.raises(ApiException) as refused:
            _patch(custom, namespace, change)
        assert refused.value.status == 422
        assert "spec.managedBy is immutable" in json.loads(refused.value.body)["message"]

    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "frozen")
    _create(custom, namespace)
    with pytest.raises(ApiException) as added:
        _patch(custom, namespace, {"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})
    assert "cannot be added or removed after creation" in json.loads(added.value.body)["message"]
