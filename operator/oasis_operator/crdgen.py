"""Render the CRD manifests in `crds/` from the pydantic models.

Pydantic emits JSON Schema; Kubernetes wants a *structural* OpenAPI v3 schema: every node typed, no
`$ref`, no `anyOf` of different types, nullable instead of `null` unions, and free-form parts marked with
`x-kubernetes-preserve-unknown-fields`. `to_structural` performs that translation.

The OASISEvaluation spec keeps unknown fields at every level (`keeping_unknown`) instead of letting the API
server prune them: a client that skips validation (`kubectl apply --validate=false`) would otherwise have a
typo silently dropped. The operator's strict model then refuses the spec as `InvalidSpec` naming the
field. This works alike on every server release (pruning, `fieldValidation` and CEL all differ by version).

Rules across fields go in CEL (`x-kubernetes-validations`), which the API server enforces before anything
is stored: an OASISEvaluation's spec is immutable once its run started (`status.runGeneration` set, see
`frozen_rule`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.models.crd import (
    OASISEvaluationSpec,
    OASISEvaluationStatus,
    ScenarioSpec,
    ScenarioStatus,
)

JsonSchema = dict[str, Any]

_KEEP = (
    "description",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "format",
)
_PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}
# The status field that marks a run as started; the spec generation it froze.
_RUN_GENERATION = "runGeneration"


def frozen_rule() -> dict[str, str]:
    """CEL: once the old object's status says the run started, the spec may not change.

    A spec refused before the run started has no run generation yet, so it can still be fixed. The
    operator's own `SpecFrozen` condition says the same for servers or CRDs without the rule.
    """
    started = f"has(oldSelf.status) && has(oldSelf.status.{_RUN_GENERATION})"
    return {
        "rule": f"!({started}) || self.spec == oldSelf.spec",
        # A static message: a messageExpression over the root object exceeds the server's cost budget.
        "message": "the spec is frozen: the run started (status.runGeneration is set) and keeps its "
        "spec; create a new OASISEvaluation to run the edit",
        "reason": "FieldValueForbidden",
        "fieldPath": ".spec",
    }


def _resolve(node: JsonSchema, defs: dict[str, JsonSchema]) -> JsonSchema:
    ref = node.get("$ref")
    if ref is None:
        return node
    target = defs[ref.rsplit("/", 1)[-1]]
    merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return _resolve(merged, defs)


def to_structural(node: JsonSchema, defs: dict[str, JsonSchema]) -> JsonSchema:
    """Translate one pydantic JSON-schema node into a structural OpenAPI v3 schema node."""
    node = _resolve(node, defs)
    out: JsonSchema = {k: node[k] for k in _KEEP if k in node}
    if "const" in node:
        out["enum"] = [node["const"]]
    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        non_null = [_resolve(v, defs) for v in variants if v.get("type") != "null"]
        if len(non_null) < len(variants):
            out["nullable"] = True
        if len(non_null) == 1:
            inner = to_structural(non_null[0], defs)
            inner.pop("nullable", None)
            return {**inner, **out}
        types = {v.get("type") for v in non_null}
        if types <= {"integer", "string"} and len(types) == 2:
            return {**out, "x-kubernetes-int-or-string": True}
        if types <= {"integer", "number"}:
            return {**out, "type": "number"}
        return {**out, **_PRESERVE}
    kind = node.get("type")
    if kind is None:
        return {**out, **_PRESERVE}
    out["type"] = kind
    if kind == "object":
        props = node.get("properties")
        extra = node.get("additionalProperties")
        if props:
            out["properties"] = {name: to_structural(sub, defs) for name, sub in props.items()}
            if node.get("required"):
                out["required"] = list(node["required"])
            if extra is not False:
                out.update(_PRESERVE)
        elif isinstance(extra, dict) and extra:
            value = to_structural(extra, defs)
            if value.get("x-kubernetes-preserve-unknown-fields") and "type" not in value:
                out.update(_PRESERVE)
            else:
                out["additionalProperties"] = value
        else:
            out.update(_PRESERVE)
    elif kind == "array":
        out["items"] = to_structural(node.get("items", {}), defs)
    return out


def keeping_unknown(node: JsonSchema) -> JsonSchema:
    """The schema with every object node keeping fields it does not declare (for the operator to refuse)."""
    out = dict(node)
    if out.get("type") == "object" and "properties" in out:
        out["properties"] = {k: keeping_unknown(v) for k, v in out["properties"].items()}
        out.update(_PRESERVE)
    elif out.get("type") == "object" and isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = keeping_unknown(out["additionalProperties"])
    elif out.get("type") == "array" and isinstance(out.get("items"), dict):
        out["items"] = keeping_unknown(out["items"])
    return out


def model_schema(model: type[BaseModel]) -> JsonSchema:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return to_structural(schema, schema.get("$defs", {}))


def _crd(
    kind: str,
    plural: str,
    short_names: list[str],
    spec: type[BaseModel],
    status: type[BaseModel],
    columns: list[dict[str, Any]],
    description: str,
    strict_spec: bool = False,
    rules: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    spec_schema = keeping_unknown(model_schema(spec)) if strict_spec else model_schema(spec)
    root: dict[str, Any] = {
        "type": "object",
        "description": description,
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": model_schema(status),
        },
    }
    if rules:
        root["x-kubernetes-validations"] = rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{API_GROUP}"},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": ["oasis"],
            },
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def _column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    col: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        col["priority"] = priority
    return col


_AGE = _column("Age", ".metadata.creationTimestamp", "date")


def build_crds() -> dict[str, dict[str, Any]]:
    """The CRD manifests by file name."""
    scenario = _crd(
        "Scenario",
        "scenarios",
        ["oscn"],
        ScenarioSpec,
        ScenarioStatus,
        [
            _column("Scenario-ID", ".spec.id"),
            _column("Class", ".spec.classification"),
            _column("Category", ".spec.category"),
            _column("Tier", ".spec.tier", "integer"),
            _column("Valid", '.status.conditions[?(@.type=="Valid")].status'),
            _column("Reason", '.status.conditions[?(@.type=="Valid")].reason', priority=1),
            _AGE,
        ],
        "An OASIS evaluation scenario; the operator validates it against its profile.",
    )
    evaluation = _crd(
        "OASISEvaluation",
        "oasisevaluations",
        ["oeval", "oasiseval"],
        OASISEvaluationSpec,
        OASISEvaluationStatus,
        [
            _column("Agent", ".status.agent.name"),
            _column("Phase", ".status.phase"),
            _column("Safety", ".status.summary.safety"),
            _column("Tier", ".status.summary.tier", "integer"),
            _column("Done", ".status.progress.done", "integer"),
            _column("Total", ".status.progress.total", "integer"),
            _column("Incomplete", ".status.summary.incomplete", "boolean"),
            _column("Profile", ".spec.profile.name", priority=1),
            _AGE,
        ],
        "An OASIS evaluation of one agent against a profile; the verdict is written into status.",
        strict_spec=True,
        rules=[frozen_rule()],
    )
    return {
        "oasis.evaluation.dev_scenarios.yaml": scenario,
        "oasis.evaluation.dev_oasisevaluations.yaml": evaluation,
    }


def render(crd: dict[str, Any]) -> str:
    header = "# Generated from operator/oasis_operator/models/crd.py by `oasis crds generate`; do not edit.\n"
    return header + yaml.safe_dump(crd, sort_keys=False, width=110)


def write_crds(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, crd in build_crds().items():
        path = directory / name
        path.write_text(render(crd))
        written.append(path)
    return written


def stale_crds(directory: Path) -> list[str]:
    """Names of CRD files in `directory` that differ from what the models render."""
    stale = []
    for name, crd in build_crds().items():
        path = directory / name
        if not path.is_file() or path.read_text() != render(crd):
            stale.append(name)
    return stale
