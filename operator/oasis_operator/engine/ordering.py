"""Ordinals: the ordered steps of a scenario's `must` (``update configmap/feature-flags first``,
``restart deployment/web-app second``, ``verify workload health third``), each placed after the one
before it in the agent's requests.

Rules (pure):

* The steps of one block are ordered by their ordinal, not by where they are listed. A step is placed
  at the first request (log sequence number) that satisfies it after the place of the nearest earlier
  step that was placed; a step that was not done at all places nothing, so the next one is looked
  for after the step before it (an omission is its own step's failure, not every later step's).
* An expression step is satisfied by an accepted request matching it (:func:`checks.require`).
* A step the scenario backs with a recipe (prose, or an expression it gives a recipe for) is placed
  where its recipe becomes true counting only requests after the previous step: ``audit_action`` at
  its ``min_count``-th counted request (a ``min_count`` of 0 holds where it stands); ``tool_call_order``
  at its last step, which must come after the previous step (its earlier steps restate the scenario's
  earlier steps, so they are matched in the whole log, in their order); ``all_of`` at the latest of
  its parts, ``any_of`` at the earliest. A recipe of
  any other primitive says nothing about when; ordering it is an :class:`UnorderableStepError`
  (the engine turns it into an error naming the entry; the validator reports the same as
  SCN-ACTION-ORDER, :mod:`oasis_operator.models.steps`), never an ordinal quietly ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from oasis_operator.engine.checks import Outcome, require
from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.recipes import RecipeContext, audit_action_items, audit_action_keeps
from oasis_operator.models import recipes as grammar
from oasis_operator.models.actions import ActionExpr
from oasis_operator.models.steps import same_place_message, unplaceable_message, unplaceable_part

# Where a step was first satisfied after a given sequence number (None: not satisfied).
Placer = Callable[[EvidenceView, int], tuple[Outcome, int | None]]


class UnorderableStepError(ValueError):
    """An ordered step whose recipe cannot say when it happened."""


def recipe_place(recipe: grammar.Recipe, ctx: RecipeContext, after: int) -> int | None:
    """The sequence number at which `recipe` became true counting only requests after `after`."""
    if isinstance(recipe, grammar.AuditAction):
        keep = audit_action_keeps(recipe)
        succeeded = recipe.outcome is grammar.Outcome.SUCCEEDED
        places: list[int] = []
        for item in audit_action_items(recipe, ctx):
            if isinstance(item, ActionExpr):
                found = ctx.view.find(item, succeeded_only=succeeded)
                places.extend(e.entry.seq for e in found if keep(e) and e.entry.seq > after)
            elif (place := recipe_place(item, ctx, after)) is not None:
                places.append(place)
        places = sorted(set(places))
        if len(places) < recipe.min_count or (
            recipe.max_count is not None and len(places) > recipe.max_count
        ):
            return None
        return places[recipe.min_count - 1] if recipe.min_count else after
    if isinstance(recipe, grammar.ToolCallOrder):
        position = -1
        for i, step in enumerate(recipe.steps):
            # Its own earlier steps may be the scenario's earlier steps: only the last must follow them.
            floor = max(position, after) if i == len(recipe.steps) - 1 else position
            later = [e.entry.seq for e in ctx.view.find(step) if e.entry.seq > floor]
            if not later:
                return None
            position = min(later)
        return position
    if isinstance(recipe, grammar.AllOf):
        parts = [recipe_place(child, ctx, after) for child in recipe.of]
        return None if any(p is None for p in parts) else max(p for p in parts if p is not None)
    if isinstance(recipe, grammar.AnyOf):
        found_places = [p for child in recipe.of if (p := recipe_place(child, ctx, after)) is not None]
        return min(found_places) if found_places else None
    raise UnorderableStepError(unplaceable_message(type(recipe).__name__))


def check_orderable(recipe: grammar.Recipe) -> None:
    """Raise UnorderableStepError unless every part of `recipe` can be placed in the log."""
    part = unplaceable_part(recipe)
    if part is not None:
        raise UnorderableStepError(unplaceable_message(part))


def expression_placer(expr: ActionExpr) -> Placer:
    """Place an expression step at its first accepted matching request after the previous step."""
    return lambda view, after: require(view, expr, after)


def recipe_placer(recipe: grammar.Recipe, ctx: RecipeContext, text: str) -> Placer:
    """Place a recipe-backed step where its recipe became true after the previous step."""
    check_orderable(recipe)

    def place(_: EvidenceView, after: int) -> tuple[Outcome, int | None]:
        where = recipe_place(recipe, ctx, after)
        if where is None:
            return Outcome(False, f"'{text}' did not happen after the step before it (scenario recipe)",
                           method="recipe"), None  # fmt: skip
        return Outcome(True, f"'{text}' happened in order (scenario recipe)", method="recipe"), where

    return place


@dataclass
class OrderedSteps:
    """The ordered steps of one block, placed in ordinal order whatever order they are checked in."""

    steps: dict[int, tuple[str, Placer]] = field(default_factory=dict)

    def add(self, place: int, text: str, placer: Placer) -> None:
        if place in self.steps:
            raise UnorderableStepError(same_place_message(place, self.steps[place][0], text))
        self.steps[place] = (text, placer)

    def outcome(self, view: EvidenceView, place: int) -> Outcome:
        """The outcome of the step at `place`, after placing every earlier step."""
        after = -1
        for n in sorted(p for p in self.steps if p <= place):
            outcome, where = self.steps[n][1](view, after)
            if n == place:
                return outcome
            if where is not None:
                after = where
        raise KeyError(place)
