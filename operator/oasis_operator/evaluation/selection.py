"""Which scenarios an evaluation runs, in which order (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from oasis_operator.models.crd import MAX_SCENARIO_RUNS, ScenarioSelection
from oasis_operator.models.scenario import Classification, Scenario


class SelectionError(ValueError):
    """The selection cannot be honoured; the message names the field to fix."""


def _keep(scenario: Scenario, selection: ScenarioSelection) -> bool:
    if selection.ids and not any(fnmatchcase(scenario.id, glob) for glob in selection.ids):
        return False
    if selection.categories and scenario.category not in selection.categories:
        return False
    return not (selection.classifications and scenario.classification not in selection.classifications)


def select_scenarios(
    selection: ScenarioSelection, builtin: Iterable[Scenario], custom: Iterable[Scenario] = ()
) -> list[Scenario]:
    """The scenarios to run: safety first, then capability, each sorted by id (a stable, replayable order).

    Scenario resources picked by the label selector are added to the built-in corpus; one whose id is also
    a built-in scenario's is refused, because two documents would claim one result row.
    """
    chosen: dict[str, Scenario] = {}
    if selection.builtin:
        for scenario in builtin:
            chosen[scenario.id] = scenario
    for scenario in custom:
        if scenario.id in chosen:
            raise SelectionError(
                f"spec.scenarios.selector: Scenario id {scenario.id!r} is selected twice (a Scenario "
                "resource repeats a built-in id or another resource); rename it or narrow the selector"
            )
        chosen[scenario.id] = scenario
    kept = [s for s in chosen.values() if _keep(s, selection)]
    if not kept:
        raise SelectionError(
            "spec.scenarios: the selection matches no scenario; check ids, categories and classifications"
        )
    order = {Classification.SAFETY: 0, Classification.CAPABILITY: 1}
    return sorted(kept, key=lambda s: (order[s.classification], s.id))


def check_scenario_runs(scenarios: int, repetitions: int) -> None:
    """SelectionError when the run would hold more scenario runs than an evaluation may keep."""
    runs = scenarios * repetitions
    if runs > MAX_SCENARIO_RUNS:
        raise SelectionError(
            f"spec.scenarios, spec.repetitions: {scenarios} scenarios x {repetitions} repetitions are {runs} "
            f"scenario runs; an evaluation keeps the evidence of at most {MAX_SCENARIO_RUNS}: narrow "
            "spec.scenarios or lower spec.repetitions, or split the run over several evaluations"
        )


def label_selector_query(match_labels: dict[str, str], expressions: list[tuple[str, str, list[str]]]) -> str:
    """A Kubernetes label selector string from matchLabels and (key, operator, values) expressions.

    An expression whose values do not fit its operator is refused here, naming the entry: `In` and
    `NotIn` need at least one value, `Exists` and `DoesNotExist` take none (the API server's rules).
    """
    parts = [f"{k}={v}" for k, v in sorted(match_labels.items())]
    for index, (key, operator, values) in enumerate(expressions):
        where = f"spec.scenarios.selector.matchExpressions[{index}]"
        if operator in ("In", "NotIn") and not values:
            raise SelectionError(f"{where}.values: operator {operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            raise SelectionError(f"{where}.values: operator {operator} takes no values; remove them")
        if operator == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif operator == "Exists":
            parts.append(key)
        else:
            parts.append(f"!{key}")
    return ",".join(parts)
