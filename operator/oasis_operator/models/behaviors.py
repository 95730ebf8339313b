"""The behaviour registry and this project's per-scenario extension.

A behaviour is a named thing an agent may do, decided by a recipe (:mod:`oasis_operator.models.recipes`).
The registry is the profile's list of them plus the phrase lists their recipes may name; the extension
(``x-oasis-operator``) carries what a single scenario adds: facts, recipes for free-text actions and
checks, and stimulus facts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.connect import ConnectGrants
from oasis_operator.models.recipes import PhraseTerm, Recipe
from oasis_operator.models.stimuli import StimulusFacts

# The key of this project's extension in a scenario document (`ScenarioExtension`).
EXTENSION_KEY = "x-oasis-operator"


class BehaviorKind(StrEnum):
    """How a behaviour is decided (Core §3.5.1 / §3.5.2)."""

    ACTION = "action"  # decided from audit and state evidence
    DETECTION = "detection"  # decided from the agent's communicated output


class Behavior(BaseModel):
    """One named behaviour of the profile, with the recipe that decides it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: BehaviorKind
    group: str = Field(description="Functional group, e.g. refusal, diagnosis, audit.")
    description: str = Field(min_length=10)
    recipe: Recipe | None = Field(default=None, description="Absent only for registries read from prose.")
    same_as: str | None = Field(default=None, description="Another behaviour this one is equivalent to.")


class BehaviorRegistry(BaseModel):
    """All behaviours of a profile plus the fixed phrase lists their recipes may name."""

    model_config = ConfigDict(extra="forbid")

    phrase_lists: dict[str, list[PhraseTerm]] = Field(default_factory=dict)
    # Words of behaviour ids that carry their meaning, each with its common synonyms. A `mentions_any`
    # with phrases in a behaviour's recipe also accepts the behaviour's own words found here and their
    # synonyms; id words not listed (identify, detect, signal, ...) add nothing (RECIPES.md §3).
    synonyms: dict[str, list[str]] = Field(default_factory=dict)
    behaviors: list[Behavior] = Field(default_factory=list)

    def own_words(self, behavior_id: str) -> list[str]:
        """The behaviour id's meaning-carrying words and their synonyms, in table order."""
        words: list[str] = []
        for word in behavior_id.split("_"):
            for term in [word, *self.synonyms.get(word, [])] if word in self.synonyms else []:
                if term not in words:
                    words.append(term)
        return words

    def get(self, behavior_id: str) -> Behavior | None:
        """The behaviour with this id, or None."""
        for behavior in self.behaviors:
            if behavior.id == behavior_id:
                return behavior
        return None

    def ids(self) -> set[str]:
        """All behaviour ids."""
        return {behavior.id for behavior in self.behaviors}


class ScenarioExtension(BaseModel):
    """This project's per-scenario data under the `x-oasis-operator` key.

    `facts` are ground-truth values recipes read by name. `actions` decides whether an action written
    as free text (not a strict expression) happened; the key is the exact text. `checks` decides whether
    a verification written as free text (a state-assertion description or condition, a negative
    verification, an api_audit description) holds. `recipes` specialises a registry behaviour for this
    scenario when the generic recipe cannot express it. `stimuli` holds what a stimulus described in
    prose changes, by its index in the scenario's `stimuli` list (see `models.stimuli`). `connect` grants
    `kubectl exec`, `attach` and `port-forward`, with declared answers (see `models.connect`).
    """

    model_config = ConfigDict(extra="forbid")

    facts: dict[str, Any] = Field(default_factory=dict)
    actions: dict[str, Recipe] = Field(default_factory=dict)
    checks: dict[str, Recipe] = Field(default_factory=dict)
    recipes: dict[str, Recipe] = Field(default_factory=dict)
    stimuli: list[StimulusFacts] = Field(default_factory=list)
    connect: ConnectGrants | None = None
