"""No input a user can write ends as PROVIDER_FAILURE: the models refuse it, or the twin builds it.

For every declared kind: an unknown key, a wrong type and an impossible combination each get a finding
with the field path and what to write; and every field of every kind, fed values of every shape, is
either refused by the models (the Scenario's `Valid=False`, planning's refusal) or built by the twin. The
twin builder raising for an entry the models accepted would be the provider blaming itself for the
user's input.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.models.declared_parse import StateProblem, state_problems
from oasis_operator.models.declared_state import FIXTURE_KINDS, KINDS, UNNAMED_KINDS
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.twin import build_twin

DATA = Path(__file__).resolve().parents[2] / "data"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
# Values of every shape YAML gives: string, numbers, boolean, null, lists and mappings.
SHAPES: tuple[Any, ...] = ("x", "25m", 7, -1, 2.5, True, None, [], ["a"], [{"a": 1}], {}, {"a": 1})


@cache
def _spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())["spec"]
    return spec


def scenario_with(state: list[dict[str, Any]]) -> Scenario:
    spec = copy.deepcopy(_spec())
    spec["preconditions"]["environment"]["state"] = state
    return Scenario.model_validate({k: v for k, v in spec.items() if k != "profile"})


def resource(kind: str) -> str:
    return kind if kind in UNNAMED_KINDS else f"{kind}/web"


def problems(state: list[dict[str, Any]]) -> list[StateProblem]:
    return state_problems(scenario_with(state))


@pytest.mark.parametrize("kind", sorted(set(KINDS) - FIXTURE_KINDS))
def test_an_unknown_key_on_a_kubernetes_kind_names_it_and_the_keys_it_takes(kind: str) -> None:
    found = problems([{"resource": resource(kind), "namespace": "shop", "colour": "red"}])
    assert found[0].path == "preconditions.environment.state[0].colour"
    assert found[0].message.startswith(f"unknown field(s) ['colour']; a {kind} takes: [")
    assert "'namespace'" in found[0].message


@pytest.mark.parametrize("kind", sorted(FIXTURE_KINDS))
def test_served_kinds_keep_unknown_keys_as_written(kind: str) -> None:
    # Metrics series and similar are named by the author: kept, served by the gateway, never refused.
    assert problems([{"resource": resource(kind), "namespace": "shop", "http_requests_total": "5"}]) == []


# One wrong type per kind with typed fields: (kind, field, value, fragment of the message).
WRONG_TYPES = [
    ("namespace", "labels", ["a"], "labels has the wrong type"),
    ("deployment", "replicas", "three", "write a whole number"),
    ("pod", "restarts", -2, "greater than or equal to 0"),
    ("configmap", "data", ["k"], "data has the wrong type"),
    ("secret", "type", 3, "write a string"),
    ("service", "port", 70000, "less than or equal to 65535"),
    ("ingress", "host", {"a": 1}, "write a string"),
    ("networkpolicy", "spec", "deny", "write a mapping"),
    ("hpa", "max_replicas", 0, "greater than or equal to 1"),
    ("pvc", "bound", "maybe", "write true or false"),
    ("node", "memory_pressure", "lots", "write true or false"),
    ("node", "cpu_usage", "busy", "cannot read 'busy' as a percentage (write e.g. 85% or 85)"),
    ("pod", "cpu_usage", "hot", "cannot read 'hot' as CPU use"),
    ("nodes", "count", "many", "write a whole number"),
    ("events", "recent", [{"age": "5m"}], "Field required"),
    ("gitops-application", "sync_status", ["synced"], "write a string"),
    ("pdb", "selector", "app=web", "write a mapping"),
    ("role", "rules", "all", "write a list of a mapping"),
    ("rolebinding", "subjects", ["serviceaccount/agent"], "Input should be a valid dictionary"),
    ("logs", "entries", "one line", "write a list of a string"),
    ("metrics", "series", "cpu", "write a mapping"),
    ("traces", "spans", {"name": "x"}, "write a list of a mapping"),
    ("dashboard", "title", ["t"], "write a string"),
    ("alert", "status", 1, "write a string"),
    ("runbook", "steps", "restart", "write a list of a string"),
    ("runbook", "title", ["t"], "write a string"),
    ("database-migration", "records_created_since", "many", "write a whole number"),
    ("database-migration", "last_migration", 2, "write a string"),
    ("logs", "containers", ["app"], "write a mapping"),
    ("logs", "pod", "sometimes", "write true or false"),
    ("traces", "root_span", "GET /", "write a mapping"),
    ("dashboard", "tags", "prod", "write a list of"),
    ("alert", "labels", ["team"], "write a mapping"),
    ("alert", "for_seconds", "5m", "for_seconds has the wrong type"),
    ("statefulset", "replicas", "three", "write a whole number"),
    ("daemonset", "tolerations", "all", "write a list of a mapping"),
    ("job", "backoff_limit", -1, "greater than or equal to 0"),
    ("cronjob", "suspend", "sometimes", "write true or false"),
]


@pytest.mark.parametrize(("kind", "field", "value", "fragment"), WRONG_TYPES)
def test_a_wrong_type_names_the_field_and_what_to_write(
    kind: str, field: str, value: Any, fragment: str
) -> None:
    entry = {"resource": resource(kind), "namespace": "shop", field: value}
    if kind == "hpa":
        entry["target"] = "deployment/web"
    if kind == "pdb":
        entry["target"] = "deployment/web"
    if kind == "cronjob":
        entry["schedule"] = "@hourly"
    found = problems([entry])
    assert len(found) == 1, found
    assert found[0].path.startswith(f"preconditions.environment.state[0].{field}")
    assert fragment in found[0].message


def test_every_kind_with_typed_fields_has_a_wrong_type_case() -> None:
    typed = {kind for kind, model in KINDS.items() if set(model.model_fields) - {"namespace"}}
    assert typed <= {kind for kind, *_ in WRONG_TYPES}


# Impossible combinations the builder used to find while building (now model rules with a path).
COMBINATIONS = [
    ([{"resource": "hpa/web", "namespace": "shop"}], "[0]", "an hpa needs target: deployment/<name>"),
    (
        [{"resource": "service/web", "namespace": "shop", "port": 80, "ports": [{"port": 81}]}],
        "[0]",
        "either `port` or `ports`",
    ),
    ([{"resource": "pod/p", "namespace": "shop", "node": "node-4"}], "[0].node", "declare node/node-4"),
    (
        [
            {"resource": "service/a", "namespace": "shop"},
            {"resource": "service/b", "namespace": "shop"},
            {"resource": "ingress/web", "namespace": "shop"},
        ],
        "[2].backend",
        "has 2 services; write backend: <service name>",
    ),
    (
        [{"resource": "deployment/web", "namespace": "Shop_1"}],
        "[0].namespace",
        "not a valid namespace name",
    ),
    ([{"resource": "namespace/kube-public"}], "[0].resource", "reserved by Kubernetes"),
]


@pytest.mark.parametrize(("state", "path", "fragment"), COMBINATIONS)
def test_an_impossible_combination_is_named(state: list[dict[str, Any]], path: str, fragment: str) -> None:
    found = problems(state)
    assert [p.path for p in found] == [f"preconditions.environment.state{path}"]
    assert fragment in found[0].message


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_of_every_shape_is_refused_or_built(kind: str) -> None:
    model = KINDS[kind]
    built = refused = 0
    for field in sorted(set(model.model_fields) - {"namespace"}):
        for value in SHAPES:
            entry: dict[str, Any] = {"resource": resource(kind), "namespace": "shop", field: value}
            if kind in ("hpa", "pdb") and field != "target":
                entry["target"] = "deployment/web"
            if kind == "cronjob" and field != "schedule":
                entry["schedule"] = "@hourly"
            state = [{"resource": "service/web", "namespace": "shop"}, entry]
            scenario = scenario_with(state)
            if state_problems(scenario):
                refused += 1
                continue
            build_twin(
                scenario, "e1234567", "sbx", NOW
            )  # raises if the model let through what it can't build
            built += 1
    if len(model.model_fields) > 1:
        assert built, (kind, refused)
        assert refused, (kind, built)
