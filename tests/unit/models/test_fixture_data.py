"""Fixture entries carry their kind's model: parsed once where they are written, read by attribute.

A scenario's state entries reach the gateway through the twin builder (the declared-state models refuse
them first, `test_declared_inputs.py`); a stimulus's `change.fixtures` are written as fixture entries
directly, and are refused at load the same way, with the path under `x-oasis-operator`.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from oasis_operator.models.declared_state import FIXTURE_KINDS, KINDS
from oasis_operator.models.environment import FIXTURE_DATA, FixtureEntry, GitOpsRecord
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.served_state import AlertState, MetricPoint, MetricsState
from oasis_operator.models.stimuli import StateChange
from oasis_operator.profiles import default_profile_path, load_profile, validate_scenario
from oasis_operator.sandbox.twin import build_twin

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CHANGE = "x-oasis-operator.stimuli[0].change.fixtures[0]"
KIND_LIST = (
    "['alert', 'dashboard', 'database-migration', 'gitops-application', 'ingress-status', 'logs', 'metrics', "
    "'node-usage', 'runbook', 'traces', 'workload-signals']"
)


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(default_profile_path())


def _errors(**given: Any) -> list[tuple[tuple[int | str, ...], str]]:
    with pytest.raises(ValidationError) as caught:
        FixtureEntry.model_validate({"name": "api-service", **given})
    return [(item["loc"], item["msg"]) for item in caught.value.errors()]


def test_every_served_kind_and_every_derived_entry_has_a_model() -> None:
    assert FIXTURE_KINDS | {"gitops-application"} <= set(FIXTURE_DATA)
    for kind in FIXTURE_KINDS:
        assert issubclass(FIXTURE_DATA[kind], KINDS[kind])
    assert set(FIXTURE_DATA) - FIXTURE_KINDS == {
        "gitops-application",
        "node-usage",
        "workload-signals",
        "ingress-status",
    }


def test_data_written_as_a_mapping_becomes_the_kinds_model_and_dumps_as_written() -> None:
    written = {"status": "firing", "severity": "warning", "summary": "memory is high"}
    entry = FixtureEntry(kind="alert", name="high-memory", data=written)
    alert = entry.data_as(AlertState)
    assert (alert.status, alert.severity, alert.alertname) == ("firing", "warning", None)
    assert entry.written() == written
    assert entry.model_dump() == {"kind": "alert", "name": "high-memory", "namespace": None, "data": written}
    assert FixtureEntry.model_validate(entry.model_dump()) == entry
    with pytest.raises(TypeError, match="alert/high-memory holds AlertState, not MetricsState"):
        entry.data_as(MetricsState)


def test_a_metric_keeps_its_author_named_series_typed() -> None:
    entry = FixtureEntry(kind="metrics", name="web", data={
        "error_rate": [{"t": "-30m", "value": "0.1%"}, {"t": "now", "value": "12%"}],
        "normal_error_rate": "0.5%", "p99_latency_ms": 4500,
    })  # fmt: skip
    metrics = entry.data_as(MetricsState)
    assert metrics.signals() == {
        "error_rate": [MetricPoint(t="-30m", value="0.1%"), MetricPoint(t="now", value="12%")],
        "normal_error_rate": "0.5%",
        "p99_latency_ms": 4500,
    }
    assert entry.written()["error_rate"] == [{"t": "-30m", "value": "0.1%"}, {"t": "now", "value": "12%"}]


def test_a_change_replaces_keys_through_the_model() -> None:
    entry = FixtureEntry(kind="gitops-application", name="api", data={"sync_status": "out_of_sync"})
    synced = entry.changed(sync_status="synced", last_sync="2026-11-29T12:00:00+00:00")
    record = synced.data_as(GitOpsRecord)
    assert (record.sync_status, record.last_sync) == ("synced", "2026-11-29T12:00:00+00:00")
    assert entry.data_as(GitOpsRecord).sync_status == "out_of_sync"  # the original is not changed
    with pytest.raises(ValidationError, match="self_heal"):
        entry.changed(self_heal="sometimes")


def test_an_unknown_fixture_kind_names_the_kinds() -> None:
    assert _errors(kind="logz") == [
        (("kind",), f"Value error, unknown fixture kind 'logz'; write one of {KIND_LIST}")
    ]


def test_a_wrong_type_in_fixture_data_has_its_path_under_data() -> None:
    assert _errors(kind="logs", data={"entries": "one line"}) == [
        (("data", "entries"), "Input should be a valid list")
    ]
    assert [loc for loc, _ in _errors(kind="metrics", data={"error_rate": {"a": 1}})][-1] == (
        "data", "error_rate", "list[MetricPoint]",
    )  # fmt: skip
    assert _errors(kind="node-usage", data={"cpu_percent": "busy"}) == [
        (("data", "cpu_percent"), "Input should be a valid number, unable to parse string as a number")
    ]


def test_a_derived_entry_refuses_keys_it_does_not_have() -> None:
    assert _errors(kind="ingress-status", data={"status": "degraded", "backend": "web", "colour": "red"}) == [
        (("data", "colour"), "Extra inputs are not permitted")
    ]


@cache
def _auditability(profile_dir: str) -> dict[str, Any]:
    path = Path(profile_dir) / "scenarios" / "capability" / "auditability.yaml"
    for document in yaml.safe_load_all(path.read_text()):
        if document and any(s.get("change") for s in document.get("x-oasis-operator", {}).get("stimuli", [])):
            return dict(document)
    raise AssertionError("no auditability scenario with a stimulus change")


def _with_change_data(data: Any) -> dict[str, Any]:
    document = copy.deepcopy(_auditability(str(default_profile_path())))
    stimuli = document["x-oasis-operator"]["stimuli"]
    stimuli[:] = [s for s in stimuli if s.get("change")][:1]
    stimuli[0]["change"]["fixtures"][0]["data"] = data
    return document


def test_a_stimulus_fixture_of_the_wrong_type_is_refused_at_load_with_its_path(profile: Profile) -> None:
    document = _with_change_data({"status": "firing", "labels": ["team"]})
    findings = [f for f in validate_scenario(document, profile) if f.rule == "OPR-EXTENSION-INVALID"]
    assert [(f.path, f.message) for f in findings] == [
        (
            f"{CHANGE}.data.labels",
            "Input should be a valid dictionary; see RECIPES.md §5 for the x-oasis-operator layout",
        )
    ]


def test_a_valid_stimulus_fixture_is_typed_and_stamped(profile: Profile) -> None:
    document = _with_change_data({"status": "firing", "active_at": "now"})
    assert not [f for f in validate_scenario(document, profile) if f.rule == "OPR-EXTENSION-INVALID"]
    change = Scenario.model_validate(document).extension.stimuli[0].change
    assert isinstance(change, StateChange)
    stamped = change.at("2026-11-29T12:00:00Z").fixtures[0]
    assert stamped.data_as(AlertState).active_at == "2026-11-29T12:00:00Z"
    assert stamped.written() == {"status": "firing", "active_at": "2026-11-29T12:00:00Z"}


def test_the_twin_writes_typed_fixtures_for_every_shipped_scenario(profile: Profile) -> None:
    for scenario in profile.scenarios:
        plan = build_twin(scenario, "e1234567", "sbx", NOW)
        for fixture in plan.fixtures:
            assert isinstance(fixture.data, FIXTURE_DATA[fixture.kind]), (scenario.id, fixture.kind)
