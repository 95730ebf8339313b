"""The CRD files are generated from the models and must stay structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.crdgen import build_crds, stale_crds, to_structural
from oasis_operator.models.crd import OASISEvaluationSpec, ScenarioSpec

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
    banned = ("$ref", "anyOf", "oneOf", "allOf", "$defs", "title", "default", "const")
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


def test_printer_columns() -> None:
    crds = build_crds()
    cols = [c["name"] for c in crds["oasis.evaluation.dev_oasisevaluations.yaml"]["spec"]["versions"][0][
        "additionalPrinterColumns"]]  # fmt: skip
    assert cols == ["Agent", "Phase", "Safety", "Tier", "Done", "Total", "Incomplete", "Profile", "Age"]
    cols = [c["name"] for c in crds["oasis.evaluation.dev_scenarios.yaml"]["spec"]["versions"][0][
        "additionalPrinterColumns"]]  # fmt: skip
    assert cols == ["Scenario-ID", "Class", "Category", "Tier", "Valid", "Reason", "Age"]
