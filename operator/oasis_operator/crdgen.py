"""Render the CRD manifests in `crds/` from the pydantic models.

Pydantic emits JSON Schema; Kubernetes wants a *structural* OpenAPI v3 schema: every node typed, no
`$ref`, no `anyOf` of different types, nullable instead of `null` unions. `to_structural` performs that
translation.

Every object the models close (`extra="forbid"`) is closed in the schema too, so the API server's field
validation names an unknown field when it is applied: `kubectl apply` (strict by default) and
`--validate=strict` refuse it, `--validate=warn` warns and drops it. Only free-form parts keep unknown
fields (`x-kubernetes-preserve-unknown-fields`): mappings of any value (`state_diff`, `rubric`, the
`x-oasis-operator` block, kopf's progress) and the profile-shaped objects of a scenario (a declared state
entry, an agent scope, an assertion entry), whose extra keys the profile validator judges. A client that
skips validation (`--validate=false`) has an unknown field pruned by the server, as for any built-in kind.

What the models carry beyond types goes into the schema as well: every field's description (Field
descriptions, attribute docstrings, a model's docstring for a field of that model), so `kubectl explain`
documents it; the defaults of the OASISEvaluation spec (a Scenario is an OASIS document recorded as
written: the server adds nothing to it); and the cross-field rules of the models' validators as CEL
(`x-kubernetes-validations`, declared beside the validator in the model's `json_schema_extra`), which the
API server enforces before anything is stored. An OASISEvaluation's spec is also immutable once its run
started (`status.runGeneration` set, see `frozen_rule`), but for `suspend`. Conditions are a list map
keyed by `type`.
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
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
)
_PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}
# The status field that marks a run as started; the spec generation it froze.
_RUN_GENERATION = "runGeneration"
# The type fields every object has, described as the API server describes them for built-in kinds
# (`metadata` takes no description: the server documents it itself).
_ENVELOPE = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object.",
    "kind": "Kind is a string value representing the REST resource this object represents.",
}


# The one spec field a started run lets change: it holds or resumes the run (evaluation.suspension).
_UNFROZEN = frozenset({"suspend"})


def _same_field(name: str) -> str:
    """CEL: the spec field `name` is the same in the new object as in the old (both absent counts)."""
    new, old = f"self.spec.{name}", f"oldSelf.spec.{name}"
    return f"(has({new}) ? has({old}) && {new} == {old} : !has({old}))"


def frozen_rule() -> dict[str, str]:
    """CEL: once the old object's status says the run started, the spec may not change but for `suspend`.

    A spec refused before the run started has no run generation yet, so it can still be fixed. The
    operator's own `SpecFrozen` condition says the same for servers or CRDs without the rule. The fields
    are compared one by one (every field of the model but `suspend`), as CEL has no "object without key".
    """
    started = f"has(oldSelf.status) && has(oldSelf.status.{_RUN_GENERATION})"
    fields = [name for name in OASISEvaluationSpec.model_fields if name not in _UNFROZEN]
    same = " && ".join(_same_field(name) for name in fields)
    return {
        "rule": f"!({started}) || ({same})",
        # A static message: a messageExpression over the root object exceeds the server's cost budget.
        "message": "the spec is frozen: the run started (status.runGeneration is set) and keeps its "
        "spec (only spec.suspend may change); create a new OASISEvaluation to run the edit",
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


def to_structural(
    node: JsonSchema, defs: dict[str, JsonSchema], *, spec: bool = False, defaults: bool = False
) -> JsonSchema:
    """Translate one pydantic JSON-schema node into a structural OpenAPI v3 schema node.

    `spec`: the node is part of a spec. Absent and null mean the same to the models there, so no spec
    field is nullable: the server drops a null before it validates, and a CEL rule's `has()` sees it as
    absent. `defaults`: the server fills in the models' defaults (`default` kept, except null).
    """
    node = _resolve(node, defs)
    out: JsonSchema = {k: node[k] for k in _KEEP if k in node}
    if defaults and node.get("default") is not None:
        out["default"] = node["default"]
    if "const" in node:
        out["enum"] = [node["const"]]
    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        non_null = [_resolve(v, defs) for v in variants if v.get("type") != "null"]
        if len(non_null) < len(variants) and not spec:
            out["nullable"] = True
        if len(non_null) == 1:
            inner = to_structural(non_null[0], defs, spec=spec, defaults=defaults)
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
        out.update(_object(node, defs, spec=spec, defaults=defaults))
    elif kind == "array":
        out["items"] = to_structural(node.get("items", {}), defs, spec=spec, defaults=defaults)
    return out


def _object(node: JsonSchema, defs: dict[str, JsonSchema], *, spec: bool, defaults: bool) -> JsonSchema:
    """An object node's fields: its properties (closed unless the model is open), or its values' schema."""
    out: JsonSchema = {}
    props = node.get("properties")
    extra = node.get("additionalProperties")
    if props:
        out["properties"] = {
            name: to_structural(sub, defs, spec=spec, defaults=defaults) for name, sub in props.items()
        }
        if node.get("required"):
            out["required"] = list(node["required"])
        if extra is not False:  # a profile-shaped object: its extra keys are the profile's
            out.update(_PRESERVE)
    elif isinstance(extra, dict) and extra:
        value = to_structural(extra, defs, spec=spec, defaults=defaults)
        if value.get("x-kubernetes-preserve-unknown-fields") and "type" not in value:
            out.update(_PRESERVE)
        else:
            out["additionalProperties"] = value
    else:
        out.update(_PRESERVE)
    return out


def model_schema(model: type[BaseModel], *, spec: bool = False, defaults: bool = False) -> JsonSchema:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return to_structural(schema, schema.get("$defs", {}), spec=spec, defaults=defaults)


def _crd(
    kind: str,
    plural: str,
    short_names: list[str],
    spec: type[BaseModel],
    status: type[BaseModel],
    columns: list[dict[str, Any]],
    description: str,
    defaults: bool = False,
    rules: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    envelope: dict[str, Any] = {n: {"type": "string", "description": t} for n, t in _ENVELOPE.items()}
    envelope["metadata"] = {"type": "object"}
    root: dict[str, Any] = {
        "type": "object",
        "description": description,
        "required": ["spec"],
        "properties": {
            **envelope,
            "spec": model_schema(spec, spec=True, defaults=defaults),
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
        defaults=True,
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
