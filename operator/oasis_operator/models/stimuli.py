"""Stimulus facts: what a scenario's stimuli change, as data the gateway can apply.

A scenario describes `temporal_condition`, `environmental_state` and `tool_output_injection` stimuli in
prose. This project's `x-oasis-operator.stimuli` entries (`StimulusFacts`) state the same thing as data,
keyed by the stimulus's index in the scenario's `stimuli` list:

- a `StateChange`: fixture entries added (or replacing an entry with the same kind and name) and
  Kubernetes objects patched or created, all written with the names the agent sees (declared names);
- or, for a `tool_output_injection`, an `InjectionFacts` rewrite of the targeted responses.

`Trigger` reads a scenario's `timing`. The gateway (`gateway.stimuli`) re-exports these models and
turns them into a running plan; they live here because the profile validator reads them too.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oasis_operator.models.environment import FixtureEntry
from oasis_operator.models.scenario_stimulus import Stimulus, StimulusType

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
# Stimuli the gateway delivers while the agent works: without facts they cannot reach the agent.
GATEWAY_STIMULI = frozenset({StimulusType.TEMPORAL_CONDITION, StimulusType.TOOL_OUTPUT_INJECTION})
# Stimuli that may carry facts (an environmental_state's state may instead be in the preconditions).
FACT_STIMULI = GATEWAY_STIMULI | {StimulusType.ENVIRONMENTAL_STATE}
# A value "now" under a key naming a time (lastTransitionTime, timeAdded, active_at, since) means the
# moment the change is applied; the API server would reject the literal anyway.
NOW = "now"
_TIME_KEY = re.compile(r"[Tt]ime|_at$|At$|^since$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Trigger(_Model):
    """When a temporal condition fires."""

    kind: Literal["after_tool_calls", "at_seconds", "on_nth_query", "on_first_write", "at_start"]
    count: int = Field(default=1, ge=1, description="N for after_tool_calls and on_nth_query.")
    seconds: float = Field(default=0.0, ge=0, description="For at_seconds.")
    api: str | None = Field(default=None, description="on_nth_query: the API counted (prometheus, …).")
    resource: str | None = Field(default=None, description="on_first_write: `deployments/api-service`.")
    namespace: str | None = Field(default=None, description="on_first_write: declared namespace, if any.")

    @classmethod
    def from_timing(cls, timing: str, api: str | None = None, resource: str | None = None) -> Trigger:
        """Read a scenario's `timing` (`after_first_tool_call`, `after_3_tool_calls`, `at_30s`, …).

        `at_start` is this project's: in effect before the agent's first request is answered.
        """
        text = timing.strip().lower()
        if text == "at_start":
            return cls(kind="at_start")
        if match := re.fullmatch(r"after_(\w+?)_tool_calls?", text):
            return cls(kind="after_tool_calls", count=_number(match[1]))
        if match := re.fullmatch(r"at_(\d+(?:\.\d+)?)s", text):
            return cls(kind="at_seconds", seconds=float(match[1]))
        if match := re.fullmatch(r"on_(?:(\d+)(?:st|nd|rd|th)?|([a-z]+))_query", text):
            return cls(kind="on_nth_query", count=_number(match[1] or match[2]), api=api)
        if text.startswith("on_first_write"):
            target = resource or text.partition(":")[2] or None
            return cls(kind="on_first_write", resource=target)
        raise ValueError(f"unknown stimulus timing {timing!r}")


def _number(word: str) -> int:
    if word in _ORDINALS:
        return _ORDINALS[word]
    if not word.isdigit():
        raise ValueError(f"{word!r} is not a count")
    return int(word)


class KubeChange(_Model):
    """A change to a Kubernetes object in the sandbox, named with declared names."""

    path: str = Field(description="API path with the declared namespace, e.g. /api/v1/nodes/worker-1/status.")
    patch: dict[str, Any] | None = Field(default=None, description="A patch to apply (see patch_type).")
    patch_type: Literal["merge", "strategic"] = Field(
        default="merge",
        description="merge: JSON merge patch (lists are replaced whole); strategic: Kubernetes strategic "
        "merge patch (list items such as node conditions merge by their key).",
    )
    create: dict[str, Any] | None = Field(default=None, description="An object to create at `path`.")

    @model_validator(mode="after")
    def _one_operation(self) -> KubeChange:
        if (self.patch is None) == (self.create is None):
            raise ValueError("a Kubernetes change needs exactly one of patch or create")
        return self


class StateChange(_Model):
    """What a temporal condition (or an environmental_state stimulus) changes."""

    fixtures: tuple[FixtureEntry, ...] = Field(
        default=(), description="Entries added, or replacing by kind+name."
    )
    kubernetes: tuple[KubeChange, ...] = ()

    def at(self, time: str) -> StateChange:
        """This change with every time-named `now` value set to `time` (RFC 3339)."""
        return StateChange.model_validate(_stamp(self.model_dump(), time, ""))


def _stamp(value: Any, time: str, key: str) -> Any:
    if isinstance(value, dict):
        return {k: _stamp(v, time, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stamp(v, time, key) for v in value]
    if value == NOW and _TIME_KEY.search(key):
        return time
    return value


class InjectionFacts(_Model):
    """How a tool_output_injection rewrites responses.

    Without `api`, the stimulus's `target` names the API and route (literal replacement of `find`);
    with `api`, `route`, `mode` and `pointer` say exactly what to rewrite.
    """

    text: str = Field(min_length=1, description="The text put into the response.")
    find: str | None = Field(default=None, description="replace: the literal text replaced.")
    api: str | None = Field(default=None, description="kubernetes, logs, prometheus, traces, dashboards, …")
    route: str = Field(default=".*", description="Regular expression matched against the route.")
    mode: Literal["replace", "set", "append"] = "replace"
    pointer: str | None = Field(default=None, description="set/append: JSON pointer, `*` for every item.")

    @model_validator(mode="after")
    def _complete(self) -> InjectionFacts:
        if self.mode == "replace" and not self.find:
            raise ValueError("a replacing injection needs `find`")
        if self.mode != "replace" and (self.api is None or self.pointer is None):
            raise ValueError(f"a {self.mode} injection needs `api` and `pointer`")
        return self


class StimulusFacts(_Model):
    """The data behind one stimulus of the scenario, by its index in `stimuli`."""

    stimulus: int = Field(ge=0, description="Index of the stimulus in the scenario's `stimuli` list.")
    change: StateChange | None = Field(
        default=None, description="temporal_condition / environmental_state: the state change."
    )
    injection: InjectionFacts | None = Field(default=None, description="tool_output_injection: the rewrite.")

    @model_validator(mode="after")
    def _one_kind(self) -> StimulusFacts:
        if (self.change is None) == (self.injection is None):
            raise ValueError("stimulus facts need exactly one of change or injection")
        return self


def facts_problem(stimulus: Stimulus, facts: StimulusFacts | None) -> str | None:
    """Why these facts cannot deliver this stimulus (None when they can, or none are needed)."""
    kind = stimulus.type
    if facts is None:
        if kind in GATEWAY_STIMULI:
            return f"the {kind.value} stimulus is described only in prose; the gateway cannot deliver it"
        return None
    if kind not in FACT_STIMULI:
        return f"{kind.value} stimuli take no facts (they reach the agent in its request)"
    if kind == StimulusType.TOOL_OUTPUT_INJECTION and facts.injection is None:
        return "a tool_output_injection stimulus needs `injection` facts"
    if kind != StimulusType.TOOL_OUTPUT_INJECTION and facts.change is None:
        return f"a {kind.value} stimulus needs `change` facts"
    if kind == StimulusType.TEMPORAL_CONDITION:
        if not stimulus.timing:
            return "a temporal_condition stimulus needs a timing"
        try:
            Trigger.from_timing(stimulus.timing)
        except ValueError as exc:
            return str(exc)
    if facts.injection is not None and facts.injection.api is None and not stimulus.target:
        return "an injection without `api` needs the stimulus's target"
    return None
