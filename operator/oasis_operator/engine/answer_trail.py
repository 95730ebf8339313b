"""The agent's one trail: its reported actions, merged with an audit trail it gave in its answer.

docs/agent-protocol.md is the contract. An agent may give the per-step fields (operation, reason,
trigger, state before and after) on its actions, or as a trail apart from them, in either of two forms:

* ``audit_trail: [{step, operation, reason, trigger, before, after}]`` in its response
  (``Transcript.audit_trail``);
* numbered lines in its final answer, one per step, the operation first, then labelled fields::

      1. kubectl -n default get pods — reason: find the failing pod — trigger: operator request
      2. `kubectl -n default rollout restart deployment/web`
         reason: pods stuck after the config change; trigger: alert high-memory

  A line counts as a step when its operation reads as a kubectl command, an action expression
  (``restart deployment/web``) or an HTTP call (``GET https://…``) and it carries at least one label
  (a numbered list of commands alone is a plan or a recommendation); labels are ``reason``/``why``,
  ``trigger``, ``before``, ``after``, each ended by the next label (separators: em and en dashes, ``|``,
  ``;`` and parentheses around them are dropped); ``Step N:`` may start the line. Following lines that
  start with a label continue the step.

A trail step joins the first reported action (in order, not yet joined) that is the same operation,
as written or, failing that, by the requests it made; it fills the fields the action lacks. A step no
action matches is a step of its own. Pure: text in,
steps out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from oasis_operator.engine.effects import Effect
from oasis_operator.engine.kubectl_args import KubectlCall, parse_kubectl
from oasis_operator.engine.operations import claims, may_cause, operations
from oasis_operator.models.actions import ActionSyntaxError, parse_action
from oasis_operator.models.evidence import ToolAction, TrailEntry, Transcript

_NUMBERED = re.compile(r"^\s*(?:[-*]\s*)?(?:step\s*)?#?(\d{1,3})\s*[.):]\s+(.+)$", re.IGNORECASE)
_LABELS = {
    "reason": "reason",
    "reasoning": "reason",
    "why": "reason",
    "trigger": "trigger",
    "triggered by": "trigger",
    "provenance": "trigger",
    "before": "before",
    "after": "after",
}
_LABEL = re.compile(
    r"(?:^|(?<=[\s—\u2013|;,(\[]))("
    + "|".join(sorted(map(re.escape, _LABELS), key=len, reverse=True))
    + r")\s*[:=]",
    re.IGNORECASE,
)
_CONTINUATION = re.compile(
    r"^\s*(?:[-*]\s*)?(" + "|".join(map(re.escape, _LABELS)) + r")\s*[:=]", re.IGNORECASE
)
# An HTTP call names a URL or a path: `get metrics` is an action expression, not `GET metrics`.
_HTTP = re.compile(r"^(GET|POST|PUT|PATCH|DELETE|HEAD)\s+(?:[a-z][a-z0-9+.-]*://|/)\S*", re.IGNORECASE)
# Separators around an operation or a value: dashes and bars between fields, backticks, a final period.
_LEAD = re.compile(r"^(?:[\s\u2014\u2013|;,*`]|-\s)+")
_TAIL = re.compile(r"(?:\s[-\u2014\u2013|;,]+|[\s\u2014\u2013|;,*`.])+$")


def _clean(text: str) -> str:
    text = _TAIL.sub("", _LEAD.sub("", text))
    # `op (reason: …; trigger: …)`: the parenthesis around the fields belongs to neither side.
    if text.endswith("(") or (text.endswith(")") and text.count("(") < text.count(")")):
        return _clean(text[:-1])
    return text


def is_operation(text: str) -> bool:
    """The text names one operation: a kubectl command, an action expression or an HTTP call."""
    if parse_kubectl(text) or _HTTP.match(text):
        return True
    try:
        parse_action(text)
    except ActionSyntaxError:
        return False
    return True


def _fields(text: str) -> tuple[str, dict[str, str]]:
    """(operation, {field: value}) of one step's text."""
    marks = list(_LABEL.finditer(text))
    operation = _clean(text[: marks[0].start()] if marks else text)
    out: dict[str, str] = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        value = _clean(text[mark.end() : end])
        out.setdefault(_LABELS[mark.group(1).lower()], value)
    return operation, out


def text_trail(answer: str | None) -> list[TrailEntry]:
    """The numbered trail in a final answer (module docstring); lines that name no operation are prose."""
    steps: list[tuple[int, str]] = []
    for line in (answer or "").splitlines():
        numbered = _NUMBERED.match(line)
        if numbered:
            steps.append((int(numbered.group(1)), numbered.group(2)))
        elif steps and _CONTINUATION.match(line):
            steps[-1] = (steps[-1][0], f"{steps[-1][1]} ; {_clean(line)}")
    out: list[TrailEntry] = []
    for number, text in steps:
        operation, fields = _fields(text)
        if operation and fields and is_operation(operation):
            out.append(
                TrailEntry(
                    step=number,
                    operation=operation,
                    reason=fields.get("reason") or None,
                    trigger=fields.get("trigger") or None,
                    before=fields.get("before"),
                    after=fields.get("after"),
                )
            )
    return out


def _signature(text: str) -> tuple[Any, ...] | None:
    calls = parse_kubectl(text)
    if calls:
        return tuple(_call_key(c) for c in calls)
    return (" ".join(text.split()).lower(),)


def _call_key(call: KubectlCall) -> tuple[Any, ...]:
    return (call.command, call.targets, call.namespace, call.args, call.after_dashdash)


def _action_signatures(action: ToolAction) -> set[tuple[Any, ...]]:
    out: set[tuple[Any, ...]] = set()
    if action.operation:
        out.add((" ".join(action.operation.split()).lower(),))
    args = action.arguments
    command = args.get("command") if isinstance(args, dict) else args
    if isinstance(command, str | list):
        kubectl_tool = (action.tool or "").rsplit("/", 1)[-1] in ("kubectl", "k")
        calls = parse_kubectl(command, assume_kubectl=kubectl_tool)
        if calls:
            out.add(tuple(_call_key(c) for c in calls))
    if isinstance(args, dict) and "url" in args:
        out.add((f"{str(args.get('method') or 'GET').lower()} {args['url']}".lower(),))
    return out


def _delta(entry: TrailEntry) -> dict[str, Any] | None:
    if entry.before is None and entry.after is None:
        return None
    return {"before": entry.before, "after": entry.after}


def _as_step(entry: TrailEntry) -> ToolAction:
    is_expression = not parse_kubectl(entry.operation) and not _HTTP.match(entry.operation)
    method, _, url = entry.operation.partition(" ")
    arguments: dict[str, Any] = (
        {"method": method.upper(), "url": url.strip()}
        if _HTTP.match(entry.operation)
        else {"command": entry.operation}
    )
    return ToolAction(
        tool="audit_trail",
        arguments=arguments,
        operation=entry.operation if is_expression else None,
        reasoning=entry.reason,
        trigger=entry.trigger,
        state_delta=_delta(entry),
    )


def _merge(action: ToolAction, entry: TrailEntry) -> ToolAction:
    return action.model_copy(
        update={
            "reasoning": action.reasoning if (action.reasoning or "").strip() else entry.reason,
            "trigger": action.trigger if (action.trigger or "").strip() else entry.trigger,
            "state_delta": action.state_delta if action.state_delta else _delta(entry),
        }
    )


def trail_steps(transcript: Transcript, effects: Sequence[Effect] = ()) -> list[ToolAction]:
    """The agent's trail as one list: its actions, with the steps of a trail given apart joined in.

    A step joins the first action not yet joined that is the same operation as written; failing that,
    given the record's `effects`, the first action not yet joined whose operation in the record the
    step could have made in full (the same call in other words: `kubectl get deploy x` for the MCP
    tool call that read it)."""
    steps = list(transcript.actions)
    given = list(transcript.audit_trail)
    known = {(e.step, _signature(e.operation)) for e in given}
    given += [
        e for e in text_trail(transcript.final_answer) if (e.step, _signature(e.operation)) not in known
    ]
    signatures = [_action_signatures(a) for a in steps]
    joined: set[int] = set()
    extra = _join(steps, given, joined, lambda i, entry: _signature(entry.operation) in signatures[i])
    if extra and effects:
        ops = operations(list(effects), steps)
        caused = {op.step: op.effects for op in ops if op.step is not None}

        def made_them(i: int, entry: TrailEntry) -> bool:
            own = claims(_as_step(entry))
            return i in caused and all(any(may_cause(c, e) for c in own) for e in caused[i])

        extra = _join(steps, extra, joined, made_them)
    return steps + [_as_step(e) for e in extra]


def _join(
    steps: list[ToolAction],
    given: list[TrailEntry],
    joined: set[int],
    fits: Callable[[int, TrailEntry], bool],
) -> list[TrailEntry]:
    """Join each step to the first action not yet joined that it fits; the steps that joined none."""
    left: list[TrailEntry] = []
    for entry in given:
        match = next((i for i in range(len(steps)) if i not in joined and fits(i, entry)), None)
        if match is None:
            left.append(entry)
            continue
        joined.add(match)
        steps[match] = _merge(steps[match], entry)
    return left
