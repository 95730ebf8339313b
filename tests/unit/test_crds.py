"""The CRD files are generated from the models and must stay structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.crdgen import build_crds, stale_crds, to_structural
from oasis_operator.models.crd import (
    AGENT_KINDS_RULE,
    READ_ONLY_PATHS_RULE,
    OASISEvaluationSpec,
    ScenarioSpec,
)
from oasis_operator.models.scenario import API_AUDIT_RULE

REPO = Path(__file__).resolve().parents[2]


def test_crd_files_match_the_models() -> None:
    assert stale_crds(REPO / "crds") == [], "run `oasis crds generate` and commit crds/"


def test_crd_files_parse_and_name_the_group() -> None:
    names = set()
    for path in sorted((REPO / "crds").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert doc["spec"]["group"] == "oasis.evaluation.dev"
        assert doc["spec"]["names"]["categories"] == ["oasis"]
        names.add(doc["spec"]["names"]["kind"])
    assert names == {"Scenario", "OASISEvaluation"}


def _walk(node: Any, path: str = "$") -> list[str]:
    """Paths of nodes that break the structural-schema rules."""
    if not isinstance(node, dict):
        return [f"{path}: not an object"]
    banned = ("$ref", "anyOf", "oneOf", "allOf", "$defs", "title", "const")
    problems = [f"{path}: has {key}" for key in banned if key in node]
    free = node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
    if "type" not in node and not free:
        problems.append(f"{path}: untyped")
    for name, sub in node.get("properties", {}).items():
        problems += _walk(sub, f"{path}.{name}")
    if "items" in node:
        problems += _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        problems += _walk(node["additionalProperties"], f"{path}.*")
    return problems


@pytest.mark.parametrize("name", sorted(build_crds()))
def test_schemas_are_structural(name: str) -> None:
    schema = build_crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _walk(schema) == []


def test_every_spec_field_of_the_models_is_in_the_crd() -> None:
    crds = build_crds()
    scenario = crds["oasis.evaluation.dev_scenarios.yaml"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    evaluation = crds["oasis.evaluation.dev_oasisevaluations.yaml"]["spec"]["versions"][0]["schema"]
    scenario_fields = set(scenario["properties"]["spec"]["properties"])
    model_fields = {f.alias or n for n, f in ScenarioSpec.model_fields.items()}
    assert scenario_fields == model_fields
    assert set(evaluation["openAPIV3Schema"]["properties"]["spec"]["properties"]) == set(
        OASISEvaluationSpec.model_fields
    )
    assert scenario["properties"]["spec"]["required"] == [
        n for n, f in ScenarioSpec.model_fields.items() if f.is_required()
    ]


def test_translation_rules() -> None:
    defs = {
        "Inner": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    }
    assert to_structural({"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}, defs) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "nullable": True,
    }
    assert to_structural({"anyOf": [{"type": "integer"}, {"type": "string"}]}, {}) == {
        "x-kubernetes-int-or-string": True
    }
    assert to_structural({"type": "object", "additionalProperties": {"type": "number"}}, {}) == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert to_structural({"type": "object"}, {}) == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert to_structural({"const": "x", "type": "string"}, {}) == {"enum": ["x"], "type": "string"}


def test_spec_nodes_are_not_nullable_and_carry_defaults_only_when_asked() -> None:
    node = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert to_structural(node, {}, spec=True, defaults=True) == {"type": "integer"}
    assert to_structural(node, {}) == {"type": "integer", "nullable": True}
    counted = {"type": "integer", "default": 600}
    assert to_structural(counted, {}, spec=True, defaults=True) == {"type": "integer", "default": 600}
    assert to_structural(counted, {}, spec=True) == {"type": "integer"}


def test_closed_models_give_closed_objects_and_open_ones_keep_unknown_fields() -> None:
    closed = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    assert "x-kubernetes-preserve-unknown-fields" not in to_structural(closed, {})
    profile_shaped = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert to_structural(profile_shaped, {})["x-kubernetes-preserve-unknown-fields"] is True


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = build_crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _nodes(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node with its path (`[]` for items, `.*` for map values)."""
    found = [(path, node)]
    for name, sub in node.get("properties", {}).items():
        found += _nodes(sub, f"{path}.{name}")
    if "items" in node:
        found += _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += _nodes(node["additionalProperties"], f"{path}.*")
    return found


EVALUATIONS = "oasis.evaluation.dev_oasisevaluations.yaml"
SCENARIOS = "oasis.evaluation.dev_scenarios.yaml"


@pytest.mark.parametrize("name", [EVALUATIONS, SCENARIOS])
def test_every_field_has_a_description(name: str) -> None:
    undocumented = [
        path for path, node in _nodes(_schema(name))
        if path not in ("", ".metadata") and not path.endswith(("[]", ".*")) and not node.get("description")
    ]  # fmt: skip
    assert undocumented == []


def test_only_free_form_parts_keep_unknown_fields() -> None:
    kept = {p for name in (EVALUATIONS, SCENARIOS) for p, n in _nodes(_schema(name))
            if n.get("x-kubernetes-preserve-unknown-fields")}  # fmt: skip
    assert kept == {
        ".status.kopf",  # kopf's handler progress
        ".spec.x-oasis-operator",  # the extension block; ScenarioExtension validates it
        ".spec.verification.state_diff",  # free-form mappings of the OASIS document
        ".spec.scoring.rubric",
        ".spec.applicability",  # values of several types
        ".spec.assertions.conditional[].when",
        # profile-shaped: the profile validator judges the extra keys
        ".spec.preconditions.environment.state[]",
        ".spec.preconditions.agent.scope",
        ".spec.assertions.must[]",
        ".spec.assertions.must_not[]",
        ".spec.assertions.conditional[].must[]",
        ".spec.assertions.conditional[].must_not[]",
    }


def _rules(name: str, path: str) -> list[str]:
    node = dict(_nodes(_schema(name)))[path]
    return [r["rule"] for r in node.get("x-kubernetes-validations", [])]


def test_the_models_cross_field_rules_are_cel_in_the_schema() -> None:
    assert _rules(EVALUATIONS, ".spec.agent") == [AGENT_KINDS_RULE]
    assert _rules(EVALUATIONS, ".spec.agent.command.readOnlyPaths") == [READ_ONLY_PATHS_RULE]
    assert _rules(EVALUATIONS, ".spec.scenarios.selector.matchExpressions[]") == [
        "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)"
    ]
    assert _rules(SCENARIOS, ".spec.verification.api_audit[]") == [API_AUDIT_RULE]
    assert [r["reason"] for r in _schema(EVALUATIONS)["x-kubernetes-validations"]] == ["FieldValueForbidden"]


def test_conditions_are_list_maps_keyed_by_type() -> None:
    for name in (EVALUATIONS, SCENARIOS):
        conditions = dict(_nodes(_schema(name)))[".status.conditions"]
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]
        assert "type" in conditions["items"]["required"]


def test_evaluation_spec_defaults_are_the_models_defaults() -> None:
    nodes = dict(_nodes(_schema(EVALUATIONS)))
    defaults = {p: n["default"] for p, n in nodes.items() if "default" in n}
    assert defaults == {
        ".spec.tier": 1,
        ".spec.agent.http.timeoutSeconds": 600,
        ".spec.agent.command.timeoutSeconds": 600,
        ".spec.agent.command.isolation": "sandbox",
        ".spec.agent.job.timeoutSeconds": 600,
        ".spec.scenarios": {},
        ".spec.scenarios.builtin": True,
        ".spec.environment": {},
        ".spec.parallelism": 1,
        ".spec.repetitions": 1,
        ".spec.timeouts": {},
        ".spec.timeouts.scenarioSeconds": 900,
        ".spec.timeouts.agentSeconds": 600,
        ".spec.mutation.strategy": "rename",
    }
    model = OASISEvaluationSpec.model_validate(
        {"profile": {"name": "p"}, "agent": {"http": {"url": "http://a"}}}
    )
    assert (model.tier, model.parallelism, model.timeouts.scenarioSeconds) == (1, 1, 900)
    assert not any("default" in n for p, n in _nodes(_schema(SCENARIOS)))  # recorded as written


def test_printer_columns() -> None:
    crds = build_crds()
    cols = [c["name"] for c in crds["oasis.evaluation.dev_oasisevaluations.yaml"]["spec"]["versions"][0][
        "additionalPrinterColumns"]]  # fmt: skip
    assert cols == ["Agent", "Phase", "Safety", "Tier", "Done", "Total", "Incomplete", "Profile", "Age"]
    cols = [c["name"] for c in crds["oasis.evaluation.dev_scenarios.yaml"]["spec"]["versions"][0][
        "additionalPrinterColumns"]]  # fmt: skip
    assert cols == ["Scenario-ID", "Class", "Category", "Tier", "Valid", "Reason", "Age"]
