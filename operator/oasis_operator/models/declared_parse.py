"""Read a scenario's declared state into its models, and say what is wrong with it and what to write.

What a state entry may contain is `declared_state`; this module applies it to a scenario: each entry on
its own (unknown kind or key, wrong type or value) and the entries together (a pod on a node nobody
declared, an ingress with no backend to guess). The validator reports the problems as findings and the
twin builder refuses the same entries with the same words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from oasis_operator.models.declared_state import (
    KINDS,
    UNNAMED_KINDS,
    DeclaredKind,
    IngressState,
    NodesState,
    PodStateEntry,
    ServiceState,
)
from oasis_operator.models.declared_values import DNS_LABEL, RESERVED_NAMESPACES
from oasis_operator.models.scenario import Scenario, StateEntry


@dataclass(frozen=True)
class StateProblem:
    """One thing wrong with a state entry: where (relative to the entry) and what to write instead."""

    index: int
    resource: str
    field: str | None
    message: str

    @property
    def path(self) -> str:
        base = f"preconditions.environment.state[{self.index}]"
        return f"{base}.{self.field}" if self.field else base


class DeclaredStateError(ValueError):
    """A state entry the twin cannot build; carries every problem found in it."""

    def __init__(self, problems: Sequence[StateProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{p.path} ({p.resource}): {p.message}" for p in self.problems))


def split_resource(resource: str) -> tuple[str, str]:
    """`deployment/web` → (`deployment`, `web`)."""
    kind, _, name = resource.partition("/")
    return kind, name


def _describe(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(annotation))
    if origin is Annotated:
        return _describe(get_args(annotation)[0])
    if origin in (Union, type(int | str)):
        parts = [_describe(a) for a in get_args(annotation) if a is not type(None)]
        return " or ".join(dict.fromkeys(parts))
    if origin is list:
        return f"a list of {_describe(get_args(annotation)[0])}"
    if origin is dict:
        return "a mapping"
    names = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a mapping"
    return names.get(annotation, "a value") if isinstance(annotation, type) else "a value"


def _nested_model(model: type[BaseModel], loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model a location inside `model` is an item of (`volume_claim_templates[0]` → its model)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        is_model = isinstance(current, type) and issubclass(current, BaseModel)
        if not is_model or part not in current.model_fields:
            return None
        current = current.model_fields[part].annotation
        while get_origin(current) in (Union, type(int | str), list):
            current = next(a for a in get_args(current) if a is not type(None))
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _path(loc: Sequence[int | str]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _problems(
    index: int, entry: StateEntry, kind: str, model: type[DeclaredKind], exc: ValidationError
) -> list[StateProblem]:
    allowed = sorted(model.model_fields)
    errors = exc.errors()
    extra = [item for item in errors if item["type"] == "extra_forbidden"]
    unknown = sorted(str(item["loc"][0]) for item in extra if len(item["loc"]) == 1)
    problems = []
    if unknown:
        message = f"unknown field(s) {unknown}; a {kind} takes: {allowed}"
        problems.append(StateProblem(index, entry.resource, unknown[0], message))
    for item in (item for item in extra if len(item["loc"]) > 1):
        # An unknown key inside an item (a claim template, a toleration): name it and the keys it takes.
        inner = _nested_model(model, item["loc"][:-1])
        takes = f"; it takes: {sorted(inner.model_fields)}" if inner is not None else ""
        message = f"unknown field {item['loc'][-1]!r}{takes}"
        problems.append(StateProblem(index, entry.resource, _path(item["loc"]), message))
    by_field: dict[str, list[Any]] = {}
    for item in errors:
        if item["type"] != "extra_forbidden":
            by_field.setdefault(str(item["loc"][0]) if item["loc"] else "", []).append(item)
    for top, items in by_field.items():
        item = items[0]
        loc = [f"[{p}]" if isinstance(p, int) else str(p) for p in item["loc"]]
        path = "".join(p if p.startswith("[") else f".{p}" for p in loc).lstrip(".") or None
        annotation = model.model_fields[top].annotation if top in model.model_fields else None
        if item["type"] == "literal_error":
            expected = item.get("ctx", {}).get("expected", "")
            message = f"unknown {loc[-1]} {item['input']!r}; write one of {expected}"
        elif item["type"] == "value_error":
            message = str(item["msg"]).removeprefix("Value error, ")
            path = path if len(items) == 1 else top or None
        elif item["type"] in RANGE_ERRORS and len(items) == 1:
            message = f"{loc[-1]} is out of range: {str(item['msg']).lower()}"
        elif len(items) > 1 or len(loc) == 1:
            # A union's every branch failed (or a plain type error): say what the field takes.
            path = top or None
            message = f"{top} has the wrong type ({item['msg'].lower()}); write {_describe(annotation)}"
        else:
            message = str(item["msg"])
        problems.append(StateProblem(index, entry.resource, path, message))
    return problems


def parse_entry(index: int, entry: StateEntry) -> DeclaredKind:
    """One state entry as its kind's model; raises DeclaredStateError naming the field and the fix."""
    kind, name = split_resource(entry.resource)
    model = KINDS.get(kind)
    if model is None:
        message = f"unknown resource kind {kind!r}; write one of {sorted(KINDS)}"
        raise DeclaredStateError([StateProblem(index, entry.resource, "resource", message)])
    if not name and kind not in UNNAMED_KINDS:
        message = f"write the resource as {kind}/<name>"
        raise DeclaredStateError([StateProblem(index, entry.resource, "resource", message)])
    data = dict(entry.model_extra or {})
    if entry.namespace is not None:
        data["namespace"] = entry.namespace
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise DeclaredStateError(_problems(index, entry, kind, model, exc)) from exc


def parse_state(entries: Iterable[StateEntry]) -> list[DeclaredKind]:
    """Every entry as its model; raises DeclaredStateError with every problem of every entry."""
    parsed: list[DeclaredKind] = []
    problems: list[StateProblem] = []
    for index, entry in enumerate(entries):
        try:
            parsed.append(parse_entry(index, entry))
        except DeclaredStateError as exc:
            problems.extend(exc.problems)
    if problems:
        raise DeclaredStateError(problems)
    return parsed


def parse_scenario_state(entries: Sequence[StateEntry]) -> list[DeclaredKind]:
    """Every entry as its model, checked on its own and together with the others (the twin's input).

    Raises DeclaredStateError with every problem: each entry's first, then the combinations'.
    """
    parsed = parse_state(entries)
    problems = _combination_problems(list(zip(entries, parsed, strict=True)))
    if problems:
        raise DeclaredStateError(problems)
    return parsed


@dataclass(frozen=True)
class ParsedState:
    """A scenario's declared state read once: each entry with its kind's model, in declaration order.

    Made at provisioning (`sandbox.twin.parse_twin_state`) and carried on the sandbox's record, so the
    twin, its faults and a later injection take this value instead of reading the entries again.
    """

    entries: tuple[tuple[StateEntry, DeclaredKind], ...]


def parse_declared(entries: Sequence[StateEntry]) -> ParsedState:
    """Every entry as its model, checked on its own and together (`parse_scenario_state`), as one value."""
    return ParsedState(tuple(zip(entries, parse_scenario_state(entries), strict=True)))


def state_problems(scenario: Scenario) -> list[StateProblem]:
    """Everything in the scenario's declared state the twin could not build, each with what to write."""
    try:
        parse_scenario_state(scenario.preconditions.environment.state)
    except DeclaredStateError as exc:
        return list(exc.problems)
    return []


def _combination_problems(pairs: list[tuple[StateEntry, DeclaredKind]]) -> list[StateProblem]:
    problems: list[StateProblem] = []
    declared_nodes = {
        split_resource(e.resource)[1] for e, _ in pairs if split_resource(e.resource)[0] == "node"
    }
    shared = [m for _, m in pairs if isinstance(m, NodesState)]
    count = (shared[-1].count if shared[-1].count is not None else 3) if shared else 0
    count = max(count, 0 if declared_nodes else 3)
    declared_nodes.update(f"node-{i}" for i in range(1, count + 1))
    services: dict[str, int] = {}
    for entry, model in pairs:
        if isinstance(model, ServiceState):
            ns = entry.namespace or "default"
            services[ns] = services.get(ns, 0) + 1
    for index, (entry, model) in enumerate(pairs):
        kind = split_resource(entry.resource)[0]
        namespace = entry.namespace or "default"
        if kind == "namespace":
            namespace = split_resource(entry.resource)[1]
        if namespace in RESERVED_NAMESPACES or not DNS_LABEL.match(namespace):
            message = (
                f"namespace {namespace!r} is reserved by Kubernetes or not a valid namespace name; "
                "declare your own namespace (lower-case letters, digits and '-', at most 63 characters)"
            )
            field = "resource" if kind == "namespace" else "namespace"
            problems.append(StateProblem(index, entry.resource, field, message))
        placed = isinstance(model, PodStateEntry) and model.node and model.status != "pending"
        if isinstance(model, PodStateEntry) and placed and model.node not in declared_nodes:
            message = (
                f"pod is placed on node {model.node!r}, which the scenario does not declare; "
                f"declare node/{model.node} or use one of {sorted(declared_nodes)}"
            )
            problems.append(StateProblem(index, entry.resource, "node", message))
        if isinstance(model, IngressState) and not model.backend and services.get(namespace, 0) != 1:
            message = (
                f"no backend given and namespace {namespace!r} has {services.get(namespace, 0)} services; "
                "write backend: <service name>"
            )
            problems.append(StateProblem(index, entry.resource, "backend", message))
    return problems
