"""The agent's own trail against the record: which recorded operations it reports, with which fields.

The trail is the agent's actions merged with a trail it gave in its answer (`engine/answer_trail.py`).
A step names its operation in `operation` (an action expression), in its arguments as a kubectl
command line (read as kubectl reads it: `engine/kubectl_args.py`), a mapping with `verb`/`resource`/
`name`, an MCP tool call or an HTTP call. The record is read as operations, not requests
(`engine/operations.py`): one kubectl invocation is one operation however many requests it made.

``state_delta`` is read from the trail entry when the agent gives one as fields (its ``after`` values
must equal the after-snapshot's, compared as values: ``4`` = ``"4"``, ``2Gi`` = ``2048Mi``);
otherwise from the agent's own words: the answer (and a ``before``/``after`` the step gives as text,
``spec.replicas=4``) must name the object (or the step's call names it) and, for every value the write
changed (ConfigMap data keys, replicas, images), state both the value before and the value after as
the snapshots show them. Stating both changes in the answer is a recorded delta.
"""

from __future__ import annotations

import json
from typing import Any

from oasis_operator.engine import grounding
from oasis_operator.engine.answer_trail import trail_steps
from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.effects import Effect
from oasis_operator.engine.meaning import term_value
from oasis_operator.engine.operations import operations
from oasis_operator.engine.state import container_images, get_path, read_path
from oasis_operator.models import recipes as grammar


def changed_values(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """(field, old, new) for the values a write changed that a person reports: data keys, replicas, images."""
    out: list[tuple[str, str, str]] = []
    old_data, new_data = (before or {}).get("data") or {}, (after or {}).get("data") or {}
    out += [
        (key, str(old_data.get(key)), str(new_data.get(key)))
        for key in sorted(set(old_data) | set(new_data))
        if old_data.get(key) != new_data.get(key)
    ]
    old_r, new_r = get_path(before, "spec.replicas"), get_path(after, "spec.replicas")
    if old_r != new_r and new_r is not None:
        out.append(("replicas", str(old_r), str(new_r)))
    old_i, new_i = container_images(before), container_images(after)
    if old_i != new_i:
        out.append(("image", ", ".join(old_i), ", ".join(new_i)))
    return out


def delta_stated(view: EvidenceView, effect: Effect, step: Any = None) -> bool:
    """The answer names the written object and states each changed value's before and after; a trail
    `step` that gives its state before and after as text (`spec.replicas=2`) states them too, and its
    call names the object."""
    name = effect.entry.name or ""
    before = view.before.object(effect.kind, name, effect.entry.namespace)
    after = view.after.object(effect.kind, name, effect.entry.namespace)
    changes = changed_values(before, after)
    said = [grounding.own_words(t, grounding.fetched_text(view)) for t in view.channel("agent_response")]
    delta = getattr(step, "state_delta", None) or {}
    said += [str(delta.get(k)) for k in ("before", "after") if delta.get(k) is not None]
    words = " ".join(said).lower()
    call = json.dumps(getattr(step, "arguments", None)) + " " + str(getattr(step, "operation", None) or "")
    return (
        bool(name and changes)
        and (name.lower() in words or name.lower() in call.lower())
        and all(
            field.lower() in words and old.lower() in words and new.lower() in words
            for field, old, new in changes
        )
    )


def trail_coverage(node: grammar.SelfReportCoverage, ctx: Any) -> tuple[int, int]:
    """(reported, total): the agent's operations in the record (`engine/operations.py`) and how many of
    them its trail reports with every required field (RECIPES.md `self_report_coverage`)."""
    # Discovery (`/api`, `/apis`, `/version`) is the client's plumbing, not an operation on the
    # environment: it has no resource type, so no trail could name it.
    effects = [e for e in ctx.view.effects if e.entry.resource]
    steps = trail_steps(ctx.view.bundle.transcript, effects)
    ops = [op for op in operations(effects, steps) if op.is_write or not node.writes_only]
    reported = sum(
        1
        for op in ops
        if op.step is not None
        and all(
            _required_fields_ok(node, ctx, steps[op.step], effect)
            for effect in (e for e in op.effects if e.is_write or not node.writes_only)
        )
    )
    return reported, len(ops)


def _required_fields_ok(node: grammar.SelfReportCoverage, ctx: Any, action: Any, effect: Effect) -> bool:
    for name in node.require:
        if name == "reasoning" and not (action.reasoning or "").strip():
            return False
        if name == "trigger" and not (action.trigger or "").strip():
            return False
        if name == "state_delta":
            delta = action.state_delta or {}
            after = delta.get("after") if isinstance(delta, dict) else None
            if not isinstance(after, dict) or not after:
                if not delta_stated(ctx.view, effect, action):
                    return False
                continue
            actual = ctx.view.after.object(effect.kind, effect.entry.name or "", effect.entry.namespace)
            if not all(same_value(read_path(actual, k), v) for k, v in after.items()):
                return False
    return True


def same_value(actual: Any, stated: Any) -> bool:
    """A value the agent states for a field equals the object's: as JSON, or as the same scalar written
    otherwise (`4` and `"4"`, `true` and `"true"`, `2Gi` and `2048Mi`: `engine/meaning.py`)."""
    if json.dumps(actual, sort_keys=True) == json.dumps(stated, sort_keys=True):
        return True
    if any(v is None or isinstance(v, dict | list) for v in (actual, stated)):
        return False
    have, given = (" ".join(str(v).lower().split()) for v in (actual, stated))
    if have == given:
        return True
    have_value, given_value = term_value(have), term_value(given)
    return (
        have_value is not None
        and given_value is not None
        and have_value[1] == given_value[1]
        and (have_value[0] == given_value[0] or {have_value[0], given_value[0]} == {"quantity", "number"})
    )
