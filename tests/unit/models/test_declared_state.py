"""Declared state as models: what a scenario may declare, and what a mistake in it is told to write."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.models.declared_parse import StateProblem, parse_entry, state_problems
from oasis_operator.models.declared_state import FIXTURE_KINDS, KINDS, DeploymentState
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario, StateEntry
from oasis_operator.profiles import default_profile_path, load_profile, validate_profile
from oasis_operator.sandbox.twin import TwinError, build_twin

DATA = Path(__file__).resolve().parents[2] / "data"


@cache
def profile() -> Profile:
    return load_profile(default_profile_path())


def with_state(state: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())["spec"]
    spec["preconditions"]["environment"]["state"] = state
    return spec


def problems_of(state: list[dict[str, Any]]) -> list[StateProblem]:
    document = {k: v for k, v in with_state(state).items() if k != "profile"}
    return state_problems(Scenario.model_validate(document))


def test_every_shipped_scenario_declares_only_what_the_twin_builds() -> None:
    for scenario in profile().scenarios:
        assert state_problems(scenario) == [], scenario.id
    assert not [f for f in validate_profile(profile()) if f.rule == "SCN-STATE"]


def test_a_typo_names_the_field_and_lists_what_to_write() -> None:
    found = problems_of([{"resource": "deployment/web", "namespace": "shop", "replica": 3}])
    assert len(found) == 1
    assert found[0].path == "preconditions.environment.state[0].replica"
    assert "unknown field(s) ['replica']" in found[0].message
    assert "'replicas'" in found[0].message  # the key the author meant is offered


@pytest.mark.parametrize(
    ("entry", "path", "fragment"),
    [
        ({"resource": "deployment/web", "replicas": "three"}, "replicas", "write a whole number"),
        (
            {"resource": "deployment/web", "status": "sleepy"},
            "status",
            "unknown status 'sleepy'; write one of",
        ),
        ({"resource": "deployment/web", "last_deploy": "yesterday"}, "last_deploy", "use e.g. 25m"),
        ({"resource": "pvc/data", "bound": "maybe"}, "bound", "write true or false"),
        ({"resource": "service/web", "ports": [{"name": "http"}]}, "ports[0].port", "Field required"),
        (
            {"resource": "hpa/web", "target": "daemonset/db"},
            "target",
            "target must be deployment/<name> or statefulset/<name>, got 'daemonset/db'",
        ),
        ({"resource": "events/shop", "recent": [{"object": "pod"}]}, "recent[0].object", "<kind>/<name>"),
        ({"resource": "teleporter/x"}, "resource", "unknown resource kind 'teleporter'; write one of"),
        ({"resource": "deployment"}, "resource", "write the resource as deployment/<name>"),
    ],
)
def test_wrong_types_and_values_say_what_to_write(entry: dict[str, Any], path: str, fragment: str) -> None:
    found = problems_of([{"namespace": "shop", **entry}])
    assert [p.path for p in found] == [f"preconditions.environment.state[0].{path}"]
    assert fragment in found[0].message


@pytest.mark.parametrize(
    ("state", "path", "fragment"),
    [
        (
            [{"resource": "service/web", "namespace": "shop", "port": 80, "ports": [{"port": 81}]}],
            "[0]",
            "either `port` or `ports`",
        ),
        (
            [
                {
                    "resource": "pdb/web",
                    "namespace": "shop",
                    "target": "deployment/web",
                    "min_available": 1,
                    "max_unavailable": 1,
                }
            ],
            "[0]",
            "either `min_available` or `max_unavailable`",
        ),
        (
            [{"resource": "pdb/web", "namespace": "shop"}],
            "[0]",
            "needs target: deployment/<name> or statefulset/<name>, or a selector",
        ),
        (
            [{"resource": "hpa/web", "namespace": "shop", "min_replicas": 5, "max_replicas": 2}],
            "[0]",
            "min_replicas (5) is above max_replicas (2)",
        ),
        ([{"resource": "pod/p", "namespace": "shop", "node": "node-9"}], "[0].node", "declare node/node-9"),
        ([{"resource": "ingress/web", "namespace": "shop"}], "[0].backend", "has 0 services"),
        ([{"resource": "configmap/x", "namespace": "kube-system"}], "[0].namespace", "reserved"),
    ],
)
def test_impossible_combinations_are_named(state: list[dict[str, Any]], path: str, fragment: str) -> None:
    found = problems_of(state)
    assert [p.path for p in found] == [f"preconditions.environment.state{path}"]
    assert fragment in found[0].message


def test_a_declared_node_and_a_single_service_make_the_combination_possible() -> None:
    state = [
        {"resource": "node/gpu-1"},
        {"resource": "pod/p", "namespace": "shop", "node": "gpu-1"},
        {"resource": "service/web", "namespace": "shop", "port": 80},
        {"resource": "ingress/web", "namespace": "shop"},
    ]
    assert problems_of(state) == []


def test_the_twin_reads_the_model_and_refuses_what_the_validator_refuses() -> None:
    document = with_state([{"resource": "deployment/web", "replica": 3}])
    scenario = Scenario.model_validate({k: v for k, v in document.items() if k != "profile"})
    with pytest.raises(TwinError, match=r"state\[0\] \(deployment/web\): replica: unknown field"):
        build_twin(scenario, "e1", "oasis", datetime(2026, 1, 1, tzinfo=UTC))


def test_the_model_keeps_what_was_written_and_only_that() -> None:
    model = parse_entry(0, StateEntry.model_validate({"resource": "deployment/web", "replicas": 2}))
    assert isinstance(model, DeploymentState)
    assert model.replicas == 2
    assert model.model_dump(exclude_unset=True) == {"replicas": 2}


def test_served_kinds_keep_their_series_and_kubernetes_kinds_do_not() -> None:
    assert {
        "logs",
        "metrics",
        "traces",
        "dashboard",
        "alert",
        "runbook",
        "database-migration",
    } == FIXTURE_KINDS
    metrics = parse_entry(0, StateEntry.model_validate({"resource": "metrics/web", "error_rate": "5%"}))
    assert metrics.model_dump(exclude_unset=True) == {"error_rate": "5%"}
    assert set(KINDS) >= FIXTURE_KINDS | {"deployment", "pod", "service", "nodes"}
