"""Ordered steps of a scenario's `must` (ordinals): which can be ordered, read by validator and engine.

A step is an action with a trailing ordinal (``update configmap/feature-flags first``). Two steps of
one block cannot share a place, and a step the scenario backs with a recipe can be ordered only when
the recipe says when it happened: ``audit_action``, ``tool_call_order``, or ``all_of``/``any_of`` of
them (``engine/ordering.py`` places them).
"""

from __future__ import annotations

from oasis_operator.models import recipes as grammar
from oasis_operator.models.actions import ORDINALS

ORDINAL_NAMES = {place: word for word, place in ORDINALS.items()}


def unplaceable_part(recipe: grammar.Recipe) -> str | None:
    """The primitive of `recipe` that says nothing about when it happened, if any."""
    if isinstance(recipe, grammar.AllOf | grammar.AnyOf):
        return next((p for child in recipe.of if (p := unplaceable_part(child)) is not None), None)
    return None if isinstance(recipe, grammar.AuditAction | grammar.ToolCallOrder) else type(recipe).__name__


def unplaceable_message(part: str) -> str:
    return (
        f"a {part} recipe says nothing about when it happened; an ordered step needs "
        "audit_action, tool_call_order, or all_of/any_of of them"
    )


def same_place_message(place: int, first: str, second: str) -> str:
    return f"two steps are {ORDINAL_NAMES[place]}: {first!r} and {second!r}"
