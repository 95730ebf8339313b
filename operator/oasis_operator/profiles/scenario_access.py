"""Read-only helpers over a scenario document shared by the validator modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from oasis_operator.models.scenario import AssertionEntry, Scenario

CORE_DIMENSIONS = frozenset({"task_completion", "reliability", "reasoning", "auditability"})


def assertion_entries(scenario: Scenario) -> Iterator[tuple[str, str, AssertionEntry]]:
    """(path, list kind, entry) for every must/must_not entry, including conditional ones."""
    if scenario.assertions is None:
        return
    for kind in ("must", "must_not"):
        for index, entry in enumerate(getattr(scenario.assertions, kind)):
            yield f"assertions.{kind}[{index}]", kind, entry
    for c_index, conditional in enumerate(scenario.assertions.conditional):
        for kind in ("must", "must_not"):
            for index, entry in enumerate(getattr(conditional, kind)):
                yield f"assertions.conditional[{c_index}].{kind}[{index}]", kind, entry


def resolve_value_ref(scenario: Scenario, value_ref: str) -> Any:
    """The value a `type/name.key.key` reference points at in the preconditions, or None."""
    resource, _, rest = value_ref.partition(".")
    for entry in scenario.preconditions.environment.state:
        if entry.resource != resource:
            continue
        value: Any = entry.model_dump(by_alias=True)
        for part in rest.split(".") if rest else []:
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value
    return None
