"""Status computation for the two custom resources (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from oasis_operator.models.crd import ConditionStatus, OASISEvaluationSpec, ScenarioSpec
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.profile import Finding
from oasis_operator.status.conditions import get_condition, set_condition
from oasis_operator.status.scenario import scenario_status, scenario_wire, status_patch

DATA = Path(__file__).resolve().parents[2] / "data"
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def _spec(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DATA / name).read_text())["spec"]
    return spec


def test_transition_time_moves_only_when_status_changes() -> None:
    first = set_condition([], type="Valid", status=ConditionStatus.TRUE, reason="Validated", message="a",
                          generation=1, now=T0)  # fmt: skip
    same = set_condition(first, type="Valid", status=ConditionStatus.TRUE, reason="Validated", message="b",
                         generation=2, now=T1)  # fmt: skip
    flipped = set_condition(same, type="Valid", status=ConditionStatus.FALSE, reason="ValidationFailed",
                            message="c", generation=3, now=T1)  # fmt: skip
    assert same[0].lastTransitionTime == T0
    assert same[0].message == "b"
    assert same[0].observedGeneration == 2
    assert flipped[0].lastTransitionTime == T1
    assert flipped[0].status is ConditionStatus.FALSE
    assert len(flipped) == 1


def test_valid_scenario_gets_valid_true() -> None:
    status = scenario_status(_spec("scenario-valid.yaml"), 4, [], T0)
    cond = get_condition(status.conditions, "Valid")
    assert cond is not None
    assert (cond.status, cond.reason, cond.observedGeneration) == (ConditionStatus.TRUE, "Validated", 4)
    assert status.scenarioId == "infra.safety.be.zone-violation-901"
    assert status.classification == "safety"
    assert status.findings == []
    # The wire form the handler patches: the CRD's fields, findings always, nothing of kopf's.
    wire = scenario_wire(status)
    assert sorted(wire) == ["classification", "conditions", "findings", "observedGeneration", "scenarioId"]
    assert wire["conditions"] == [
        {
            "type": "Valid",
            "status": "True",
            "reason": "Validated",
            "message": "scenario is valid",
            "lastTransitionTime": T0,
            "observedGeneration": 4,
        },
        {
            "type": "Stalled",
            "status": "False",
            "reason": "Validated",
            "message": "the scenario can be used",
            "lastTransitionTime": T0,
            "observedGeneration": 4,
        },
    ]


def test_structural_error_names_the_field() -> None:
    spec = _spec("scenario-valid.yaml")
    spec["applicability"] = {"operational_mode": {"nested": "object"}}
    del spec["scoring"]
    status = scenario_status(spec, 2, [], T0)
    cond = get_condition(status.conditions, "Valid")
    assert cond is not None
    assert (cond.status, cond.reason) == (ConditionStatus.FALSE, "ValidationFailed")
    stalled = get_condition(status.conditions, "Stalled")  # kstatus: Failed until it is edited
    assert stalled is not None
    assert (stalled.status, stalled.reason, stalled.message) == (
        ConditionStatus.TRUE,
        cond.reason,
        cond.message,
    )
    paths = {f.path for f in status.findings}
    assert "spec.scoring" in paths
    assert any(p.startswith("spec.applicability.operational_mode") for p in paths)
    assert "more errors" in cond.message
    assert status.scenarioId is None
    assert "scenarioId" not in scenario_wire(status)


def test_validator_findings_are_reported() -> None:
    def validator(_: ScenarioSpec) -> list[Finding]:
        return [
            Finding(severity="warning", rule="TEST-W1", path="spec.intent", message="short"),
            Finding(
                severity="error", rule="TEST-E1", path="spec.assertions.must[0].behavior", message="undefined"
            ),
        ]

    status = scenario_status(_spec("scenario-valid.yaml"), 1, [], T0, validator=validator)
    cond = get_condition(status.conditions, "Valid")
    assert cond is not None
    assert cond.status is ConditionStatus.FALSE
    assert cond.message == "spec.assertions.must[0].behavior: undefined"
    assert [f.rule for f in status.findings] == ["TEST-W1", "TEST-E1"]


def test_rerun_with_same_input_changes_nothing() -> None:
    first = scenario_status(_spec("scenario-valid.yaml"), 1, [], T0)
    stored = {**scenario_wire(first), "kopf": {"progress": {}}}
    again = scenario_status(_spec("scenario-valid.yaml"), 1, first.conditions, T1)
    assert status_patch(stored, again) is None
    edited = scenario_status(_spec("scenario-valid.yaml"), 2, again.conditions, T1)
    patch = status_patch(stored, edited)
    assert patch is not None
    assert patch["observedGeneration"] == 2
    assert patch["conditions"][0]["lastTransitionTime"] == T0  # still valid: the time stays


def test_evaluation_spec_errors_name_every_field() -> None:
    spec = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())["spec"]
    OASISEvaluationSpec.model_validate(spec)
    spec["agent"]["command"] = {"command": ["my-agent"]}
    spec["parallelism"] = 0
    with pytest.raises(ValidationError) as caught:
        OASISEvaluationSpec.model_validate(spec)
    error = describe_validation_error(caught.value, prefix="spec")
    assert "spec.agent: set exactly one of agent.http, agent.command, agent.job" in error
    assert "spec.parallelism: Input should be greater than or equal to 1" in error
