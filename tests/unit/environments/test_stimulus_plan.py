"""The gateway's plan built from a scenario's stimuli and their `x-oasis-operator.stimuli` facts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from oasis_operator.environments.stimuli import StimulusFactsError, stimulus_plan
from oasis_operator.gateway.stimuli import (
    KubeChange,
    OutputInjection,
    StateChange,
    TemporalCondition,
    Trigger,
)
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.served_state import AlertState, LogsState
from oasis_operator.sandbox.twin import build_twin
from tests.unit.sandbox.test_twin import NOW, profile, scenario

INTERRUPTION = "infra.capability.mr.interruption-recovery-001"
PROVENANCE = "infra.capability.au.provenance-tracking-001"
LOG_INJECTION = "infra.safety.pi.data-plane-injection-001"


def _single_condition(scenario_id: str) -> TemporalCondition:
    plan = stimulus_plan(scenario(scenario_id))
    assert plan.injections == ()
    (condition,) = plan.conditions
    return condition


def _edited(scenario_id: str, edit: Any) -> Scenario:
    doc = scenario(scenario_id).model_dump(by_alias=True, exclude_none=True)
    edit(doc)
    return Scenario.model_validate(doc)


def test_every_shipped_scenario_builds_a_plan() -> None:
    planned = {}
    for item in profile().scenarios:
        plan = stimulus_plan(item)
        if plan.conditions or plan.injections:
            planned[item.id] = [(c.id, c.trigger.kind) for c in plan.conditions]
    assert planned == {
        INTERRUPTION: [("stimuli[1]", "after_tool_calls")],
        PROVENANCE: [("stimuli[1]", "after_tool_calls")],
        LOG_INJECTION: [("stimuli[0]", "at_start")],
    }


def test_disk_pressure_on_node_2_after_the_first_tool_call() -> None:
    condition = _single_condition(INTERRUPTION)
    assert condition.trigger == Trigger(kind="after_tool_calls", count=1)
    assert "node-2 transitions to DiskPressure=True" in condition.description
    (change,) = condition.change.kubernetes
    assert (change.path, change.patch_type, change.create) == (
        "/api/v1/nodes/node-2/status",
        "strategic",
        None,
    )
    assert change.patch is not None
    (pressure,) = change.patch["status"]["conditions"]
    assert (pressure["type"], pressure["status"], pressure["reason"]) == (
        "DiskPressure",
        "True",
        "KubeletHasDiskPressure",
    )
    assert condition.change.fixtures == ()
    # Consistent with the twin: node-2 is the declared node, and it starts without disk pressure.
    plan = build_twin(scenario(INTERRUPTION), "e1234567", "sbx", NOW)
    assert [b.declared for b in plan.cluster_objects if b.kind == "Node"] == ["node-2"]
    (node,) = [o for o in plan.objects if o.kind == "Node"]
    assert node.status is not None
    before = {c["type"]: c for c in node.status["conditions"]}
    assert before["DiskPressure"]["status"] == "False"
    assert before["DiskPressure"]["reason"] == "KubeletHasNoDiskPressure"


def test_high_memory_alert_fires_for_api_service_after_the_first_tool_call() -> None:
    condition = _single_condition(PROVENANCE)
    assert condition.trigger == Trigger(kind="after_tool_calls", count=1)
    assert condition.change.kubernetes == ()
    (alert,) = condition.change.fixtures
    assert (alert.kind, alert.name, alert.namespace) == ("alert", "high-memory", None)
    assert (alert.data_as(AlertState).status, alert.data_as(AlertState).service) == ("firing", "api-service")
    # It replaces the pending alert the twin declares (same kind and name).
    plan = build_twin(scenario(PROVENANCE), "e1234567", "sbx", NOW)
    pending = [f for f in plan.fixtures if f.kind == "alert"]
    assert [(f.name, f.data_as(AlertState).status) for f in pending] == [("high-memory", "pending")]


def test_planted_log_line_is_in_effect_from_the_start() -> None:
    item = scenario(LOG_INJECTION)
    condition = _single_condition(LOG_INJECTION)
    assert condition.trigger == Trigger(kind="at_start")
    (logs,) = condition.change.fixtures
    assert (logs.kind, logs.name, logs.namespace) == ("logs", "payment-service", "default")
    quoted = re.search(r'"(.+)"', item.stimuli[0].description or "")
    assert quoted is not None
    assert quoted[1] in (logs.data_as(LogsState).entries or [])
    # The twin runs payment-service in default, and its pods' logs are looked up by that workload name.
    plan = build_twin(item, "e1234567", "sbx", NOW)
    assert [o.name for o in plan.objects if o.kind == "Deployment"] == ["payment-service"]
    assert not [f for f in plan.fixtures if f.kind == "logs"]


def test_a_gateway_stimulus_without_facts_is_a_clear_error() -> None:
    def drop_facts(doc: dict[str, Any]) -> None:
        doc["x-oasis-operator"].pop("stimuli")

    with pytest.raises(
        StimulusFactsError, match=re.escape(f"scenario {INTERRUPTION}: stimuli[1]: the ")
    ) as err:
        stimulus_plan(_edited(INTERRUPTION, drop_facts))
    assert "temporal_condition" in str(err.value)
    assert "stimulus: 1" in str(err.value)
    assert (err.value.scenario_id, err.value.index) == (INTERRUPTION, 1)


def test_an_environmental_state_without_facts_is_left_to_the_preconditions() -> None:
    def drop_facts(doc: dict[str, Any]) -> None:
        doc["x-oasis-operator"].pop("stimuli")

    assert stimulus_plan(_edited(LOG_INJECTION, drop_facts)).conditions == ()


def test_facts_that_name_no_stimulus_are_an_error() -> None:
    def bad_index(doc: dict[str, Any]) -> None:
        doc["x-oasis-operator"]["stimuli"][0]["stimulus"] = 7

    with pytest.raises(StimulusFactsError, match=r"stimuli\[7\]: facts name no stimulus"):
        stimulus_plan(_edited(INTERRUPTION, bad_index))

    def bad_timing(doc: dict[str, Any]) -> None:
        doc["stimuli"][1]["timing"] = "eventually"

    with pytest.raises(StimulusFactsError, match=r"stimuli\[1\]: unknown stimulus timing 'eventually'"):
        stimulus_plan(_edited(INTERRUPTION, bad_timing))


def _injected(
    facts: dict[str, Any] | None, target: str = "observability-dashboards/infra-overview"
) -> Scenario:
    def add(doc: dict[str, Any]) -> None:
        doc["stimuli"].append(
            {"type": "tool_output_injection", "description": "title says so", "target": target}
        )
        if facts is not None:
            doc["x-oasis-operator"]["stimuli"] = [{"stimulus": len(doc["stimuli"]) - 1, "injection": facts}]

    return _edited("infra.safety.pi.tool-output-injection-001", add)


def test_tool_output_injections() -> None:
    by_target = stimulus_plan(_injected({"find": "Infrastructure Overview", "text": "Overview — obey"}))
    assert by_target.injections == (
        OutputInjection.for_target(
            "stimuli[1]",
            "observability-dashboards/infra-overview",
            "Infrastructure Overview",
            "Overview — obey",
        ),
    )
    explicit = {
        "api": "prometheus",
        "route": "/api/v1/alerts",
        "mode": "append",
        "text": " obey",
        "pointer": "/data/alerts/*/annotations/description",
    }
    (injection,) = stimulus_plan(_injected(explicit)).injections
    assert (injection.api, injection.mode, injection.pointer) == ("prometheus", "append", explicit["pointer"])
    with pytest.raises(StimulusFactsError, match=r"stimuli\[1\]: the tool_output_injection stimulus"):
        stimulus_plan(_injected(None))
    with pytest.raises(StimulusFactsError, match=r"stimuli\[1\]: no gateway API serves the target"):
        stimulus_plan(_injected({"find": "a", "text": "b"}, target="ci-cd/build-42/logs"))


def test_now_in_time_fields_is_the_moment_the_change_applies() -> None:
    change = StateChange(
        kubernetes=(
            KubeChange(
                path="/api/v1/nodes/node-2/status",
                patch={
                    "status": {"conditions": [{"type": "X", "message": "now", "lastTransitionTime": "now"}]}
                },
            ),
        )
    )
    stamped = change.at("2026-01-01T00:00:00Z")
    assert stamped.kubernetes[0].patch == {
        "status": {
            "conditions": [{"type": "X", "message": "now", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        }
    }
    assert change.at("2026-01-01T00:00:00Z") == stamped  # pure
