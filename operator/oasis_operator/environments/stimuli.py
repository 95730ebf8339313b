"""A scenario's stimuli as the gateway's plan (pure: the same scenario always gives the same plan).

Each `temporal_condition` becomes a `TemporalCondition` fired on its `timing`; each
`tool_output_injection` an `OutputInjection`; each `environmental_state` with facts a condition in effect
before the agent's first request is answered (`at_start`). The data comes from the scenario's
`x-oasis-operator.stimuli` entries. Prompts and conversation context reach the agent in its request.
"""

from __future__ import annotations

from oasis_operator.gateway.stimuli import OutputInjection, StimulusPlan, TemporalCondition, Trigger
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.scenario_stimulus import Stimulus, StimulusType
from oasis_operator.models.stimuli import InjectionFacts, StimulusFacts, facts_problem


class StimulusFactsError(ValueError):
    """A stimulus the gateway must deliver has no usable facts: the scenario cannot be run as declared."""

    def __init__(self, scenario_id: str, index: int | None, problem: str) -> None:
        where = f"stimuli[{index}]: " if index is not None else ""
        fix = (
            f" (give it an entry `stimulus: {index}` under x-oasis-operator.stimuli)"
            if index is not None
            else ""
        )
        super().__init__(f"scenario {scenario_id}: {where}{problem}{fix}")
        self.scenario_id = scenario_id
        self.index = index


def stimulus_id(index: int) -> str:
    """How the gateway's record names a scenario's stimulus: its place in the `stimuli` list."""
    return f"stimuli[{index}]"


def _description(stimulus: Stimulus) -> str:
    return " ".join((stimulus.description or "").split())


def stimulus_plan(scenario: Scenario) -> StimulusPlan:
    """The gateway's plan for every stimulus of `scenario`; raises StimulusFactsError when one cannot be."""
    if scenario.extension_error is not None:
        detail = f"x-oasis-operator does not parse: {scenario.extension_error}"
        raise StimulusFactsError(scenario.id, None, detail)
    extension = scenario.extension
    by_index: dict[int, StimulusFacts] = {}
    for entry in extension.stimuli:
        if entry.stimulus in by_index or entry.stimulus >= len(scenario.stimuli):
            raise StimulusFactsError(scenario.id, entry.stimulus, "facts name no stimulus, or one twice")
        by_index[entry.stimulus] = entry
    injections: list[OutputInjection] = []
    conditions: list[TemporalCondition] = []
    for index, stimulus in enumerate(scenario.stimuli):
        facts = by_index.get(index)
        problem = facts_problem(stimulus, facts)
        if problem is not None:
            raise StimulusFactsError(scenario.id, index, problem)
        if facts is None:
            continue
        if facts.injection is not None:
            injections.append(_injection(scenario.id, index, stimulus, facts.injection))
        elif facts.change is not None:
            timing = stimulus.timing if stimulus.type == StimulusType.TEMPORAL_CONDITION else None
            trigger = Trigger.from_timing(timing) if timing else Trigger(kind="at_start")
            conditions.append(
                TemporalCondition(
                    id=stimulus_id(index),
                    trigger=trigger,
                    change=facts.change,
                    description=_description(stimulus),
                )
            )
    return StimulusPlan(injections=tuple(injections), conditions=tuple(conditions))


def _injection(scenario_id: str, index: int, stimulus: Stimulus, spec: InjectionFacts) -> OutputInjection:
    if spec.api is not None:
        return OutputInjection(
            id=stimulus_id(index),
            api=spec.api,
            route=spec.route,
            mode=spec.mode,
            find=spec.find,
            pointer=spec.pointer,
            text=spec.text,
        )
    try:
        return OutputInjection.for_target(
            stimulus_id(index), stimulus.target or "", spec.find or "", spec.text
        )
    except ValueError as exc:
        raise StimulusFactsError(scenario_id, index, str(exc)) from exc
