"""Rewrites of what an agent *said* in a recorded bundle, each a small pure function (issue 37 item 6,
used by test_metamorphic_expert.py): its kubectl command lines respelled as kubectl accepts them, the
numbers and words of its answer, reasoning and structured conclusion reformatted, and its trail moved
from the per-action fields into the answer's `audit_trail` or numbered lines in `final_answer`
(docs/agent-protocol.md). Only the transcript's self-report changes: the gateway's record, the
snapshots and the results the agent's calls returned are evidence and are never touched.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import Any

from oasis_operator.models.evidence import Conclusion, EvidenceBundle, ToolAction, Transcript
from oasis_operator.models.kinds import SHORT_NAMES
from oasis_operator.models.trail import TrailEntry

# --- (a) kubectl command lines, respelled as kubectl accepts them ------------------------------------

# Flags with a separate value in the recorded commands (`-n NS`, `-o json`, `--raw PATH`, ...).
_VALUED = {"-n", "--namespace", "-o", "--output", "-p", "--patch", "--type", "--raw", "-l", "--selector"}
# Commands whose first positional after the command words is a resource type.
_TYPED = {"get", "describe", "delete", "patch", "scale", "label", "annotate", "edit"}
_LONG = {"-n": "--namespace", "-o": "--output", "-p": "--patch", "-l": "--selector"}
_PLURAL = {short: plural for plural, names in SHORT_NAMES.items() for short in names}


class Line:
    """A kubectl command split as the recorded ones are written: command words, objects, flags."""

    def __init__(self, argv: list[str]) -> None:
        assert argv[0] == "kubectl", argv
        self.positionals: list[str] = []
        self.flags: list[list[str]] = []  # [flag] or [flag, value]
        i, words = 1, argv
        while i < len(words):
            word = words[i]
            if word in _VALUED:
                self.flags.append([word, words[i + 1]])
                i += 2
                continue
            (self.flags.append([word]) if word.startswith("-") else self.positionals.append(word))
            i += 1

    def flag_words(self) -> list[str]:
        return [w for f in self.flags for w in f]

    def argv(self) -> list[str]:
        return ["kubectl", *self.positionals, *self.flag_words()]

    def command_size(self) -> int:
        return 2 if self.positionals[:1] in (["rollout"], ["create"], ["set"]) else 1


Spelling = Callable[[list[str]], list[str]]


def namespace_first(argv: list[str]) -> list[str]:
    """`kubectl -n NS get pods …`: the namespace before the command."""
    line = Line(argv)
    ns = [f for f in line.flags if f[0] in ("-n", "--namespace")]
    rest = [f for f in line.flags if f not in ns]
    return ["kubectl", *(w for f in ns for w in f), *line.positionals, *(w for f in rest for w in f)]


def namespace_equals(argv: list[str]) -> list[str]:
    """`--namespace=NS` at the end of the line."""
    line = Line(argv)
    ns = [f"--namespace={f[1]}" for f in line.flags if f[0] == "-n"]
    rest = [w for f in line.flags if f[0] != "-n" for w in f]
    return ["kubectl", *line.positionals, *rest, *ns]


def namespace_glued(argv: list[str]) -> list[str]:
    """`-nNS`."""
    line = Line(argv)
    flags = [[f"-n{f[1]}"] if f[0] == "-n" else f for f in line.flags]
    return ["kubectl", *line.positionals, *(w for f in flags for w in f)]


def flags_first(argv: list[str]) -> list[str]:
    """Every flag before the command words: `kubectl -n NS -o json get pods`."""
    line = Line(argv)
    return ["kubectl", *line.flag_words(), *line.positionals]


def long_flags(argv: list[str]) -> list[str]:
    """`-o json` → `--output=json`, `-n NS` → `--namespace NS`, `--type merge` → `--type=merge`."""
    line = Line(argv)
    words: list[str] = []
    for flag in line.flags:
        if flag[0] == "-o":
            words.append(f"--output={flag[1]}")
        elif flag[0] in _LONG:
            words += [_LONG[flag[0]], flag[1]]
        elif len(flag) == 2 and flag[0].startswith("--"):
            words.append(f"{flag[0]}={flag[1]}")
        else:
            words += flag
    return ["kubectl", *line.positionals, *words]


def output_glued(argv: list[str]) -> list[str]:
    """`-ojson`."""
    line = Line(argv)
    flags = [[f"-o{f[1]}"] if f[0] == "-o" else f for f in line.flags]
    return ["kubectl", *line.positionals, *(w for f in flags for w in f)]


def _objects(line: Line) -> tuple[int, list[str]] | None:
    """Where the objects start and the objects (`type name…` or `type/name`) of a typed command."""
    size = line.command_size()
    verb = line.positionals[0] if line.positionals else ""
    if verb not in _TYPED and line.positionals[:2] not in (["rollout", "restart"], ["rollout", "status"]):
        return None
    objects = line.positionals[size:]
    return (size, objects) if objects else None


def short_kind(word: str) -> str:
    plural = {"deployment": "deployments", "configmap": "configmaps", "pod": "pods"}.get(word, word)
    for short, long in _PLURAL.items():
        if long == plural:
            return short
    return word


def type_slash_name(argv: list[str]) -> list[str]:
    """`get configmap app-config` ↔ `get cm/app-config`; `rollout restart deployment/x` ↔ `deploy x`."""
    line = Line(argv)
    found = _objects(line)
    if found is None:
        return argv
    size, objects = found
    if "/" in objects[0]:
        kind, _, name = objects[0].partition("/")
        moved = [short_kind(kind), name, *objects[1:]]
    elif len(objects) == 2:
        moved = [f"{short_kind(objects[0])}/{objects[1]}"]
    else:
        moved = [short_kind(objects[0]), *objects[1:]]
    line.positionals = [*line.positionals[:size], *moved]
    return line.argv()


def as_text(argv: list[str]) -> str:
    return shlex.join(argv)


SPELLINGS: dict[str, Spelling] = {
    "namespace first": namespace_first,
    "--namespace=": namespace_equals,
    "-nNS": namespace_glued,
    "flags first": flags_first,
    "long flags": long_flags,
    "-ojson": output_glued,
    "type/name swapped": type_slash_name,
    "everything": lambda argv: output_glued(type_slash_name(namespace_first(argv))),
}


def _command(action: ToolAction) -> list[str] | None:
    args = action.arguments
    command = args.get("command") if action.tool == "kubectl" and isinstance(args, dict) else None
    if isinstance(command, str):
        return shlex.split(command)
    return [str(w) for w in command] if isinstance(command, list) else None


def respell_actions(bundle: EvidenceBundle, spelling: Spelling, text: bool = False) -> EvidenceBundle:
    """Every kubectl command line in the actions' arguments written another way (as one string with
    `text`)."""

    def one(action: ToolAction) -> ToolAction:
        argv = _command(action)
        if argv is None:
            return action
        new = spelling(argv)
        return action.model_copy(update={"arguments": {"command": as_text(new) if text else new}})

    return with_transcript(bundle, actions=[one(a) for a in bundle.transcript.actions])


def with_transcript(bundle: EvidenceBundle, **update: Any) -> EvidenceBundle:
    return bundle.model_copy(update={"transcript": bundle.transcript.model_copy(update=update)})


# --- (d) the trail moved from the actions into the answer --------------------------------------------


Naming = Callable[[ToolAction], str]


def as_called(spelling: Spelling = lambda argv: argv) -> Naming:
    """A step named by its call: the kubectl command line (in `spelling`) or `METHOD URL`."""

    def name(action: ToolAction) -> str:
        argv = _command(action)
        if argv is not None:
            return as_text(spelling(argv))
        args = action.arguments
        assert isinstance(args, dict), action
        assert "url" in args, action
        return f"{args.get('method') or 'GET'} {args['url']}"

    return name


def as_expression(action: ToolAction) -> str:
    """A step named by the action expression the agent wrote in its action's `operation` (by its call
    where it wrote none)."""
    return action.operation or as_called()(action)


def bare(action: ToolAction) -> ToolAction:
    return action.model_copy(
        update={"operation": None, "reasoning": None, "trigger": None, "state_delta": None}
    )


Delta = Callable[[Any], Any]


def strings(values: Any) -> Any:
    """`{"spec.replicas": 4}` → `{"spec.replicas": "4"}`."""
    return {k: str(v) for k, v in values.items()} if isinstance(values, dict) else values


def key_equals_value(values: Any) -> Any:
    """`{"spec.replicas": 4}` → `spec.replicas=4`."""
    return ", ".join(f"{k}={v}" for k, v in values.items()) if isinstance(values, dict) else values


def trail_in_list(
    bundle: EvidenceBundle, naming: Naming | None = None, delta: Delta = lambda values: values
) -> EvidenceBundle:
    """The per-action trail fields given instead as the answer's `audit_trail`, one step per action
    (the state before and after written with `delta`)."""
    name = naming or as_called()
    actions = bundle.transcript.actions
    steps = [
        TrailEntry(
            step=i + 1,
            operation=name(a),
            reason=a.reasoning,
            trigger=a.trigger,
            before=delta((a.state_delta or {}).get("before")),
            after=delta((a.state_delta or {}).get("after")),
        )
        for i, a in enumerate(actions)
    ]
    return with_transcript(bundle, actions=[bare(a) for a in actions], audit_trail=steps)


def _fields(action: ToolAction) -> list[tuple[str, str]]:
    delta = action.state_delta or {}
    return [
        *([("reason", action.reasoning)] if action.reasoning else []),
        *([("trigger", action.trigger)] if action.trigger else []),
        *(
            (label, json.dumps(delta[label], sort_keys=True))
            for label in ("before", "after")
            if delta.get(label) is not None
        ),
    ]


Layout = Callable[[int, str, list[tuple[str, str]]], str]


def dashes(number: int, operation: str, fields: list[tuple[str, str]]) -> str:
    """`1. `op` — reason: … — trigger: …`"""
    return " — ".join([f"{number}. `{operation}`", *(f"{k}: {v}" for k, v in fields)])


def step_heading(number: int, operation: str, fields: list[tuple[str, str]]) -> str:
    """`Step 1: op`, then one labelled line per field (`why:` for the reason)."""
    labels = {"reason": "why"}
    return "\n".join([f"Step {number}: {operation}", *(f"   {labels.get(k, k)}: {v}" for k, v in fields)])


def parentheses(number: int, operation: str, fields: list[tuple[str, str]]) -> str:
    """`1) op (reason: …; trigger: …)`"""
    return f"{number}) {operation} (" + "; ".join(f"{k}: {v}" for k, v in fields) + ")"


def bars(number: int, operation: str, fields: list[tuple[str, str]]) -> str:
    """`- 1. op | reason: … | trigger: …`"""
    return " | ".join([f"- {number}. {operation}", *(f"{k}: {v}" for k, v in fields)])


def trail_in_lines(
    bundle: EvidenceBundle, naming: Naming | None = None, layout: Layout = dashes
) -> EvidenceBundle:
    """The per-action trail fields given instead as numbered lines at the end of `final_answer`."""
    name = naming or as_called()
    actions = bundle.transcript.actions
    lines = [layout(i + 1, name(a), _fields(a)) for i, a in enumerate(actions)]
    answer = f"{bundle.transcript.final_answer or ''}\n\nAudit trail:\n" + "\n".join(lines)
    return with_transcript(bundle, actions=[bare(a) for a in actions], final_answer=answer)


# --- (b) numbers and (c) words of the answer, the reasoning and the conclusion -----------------------

Words = Callable[[str], str]


def rewrite_words(bundle: EvidenceBundle, words: Words) -> EvidenceBundle:
    """The answer, the reasoning and the structured conclusion written with `words`."""
    t: Transcript = bundle.transcript
    conclusion: Conclusion | None = None
    if t.conclusion is not None:
        conclusion = t.conclusion.model_copy(
            update={
                "root_cause": words(t.conclusion.root_cause) if t.conclusion.root_cause else None,
                "evidence": [words(e) for e in t.conclusion.evidence],
                "discarded": [
                    d.model_copy(update={"signal": words(d.signal), "rationale": words(d.rationale)})
                    for d in t.conclusion.discarded
                ],
            }
        )
    return with_transcript(
        bundle,
        final_answer=words(t.final_answer) if t.final_answer else t.final_answer,
        reasoning=words(t.reasoning) if t.reasoning else t.reasoning,
        conclusion=conclusion,
    )


_QUANTITY = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(Gi|Mi)\b")
_PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)%")


def two_decimals(text: str) -> str:
    """2Gi → 2.00Gi."""
    return _QUANTITY.sub(lambda m: f"{Decimal(m.group(1)):.2f}{m.group(2)}", text)


def in_mebibytes(text: str) -> str:
    """2Gi → 2048Mi (1.6Gi → 1638.4Mi); Mi as written."""

    def one(m: re.Match[str]) -> str:
        value = Decimal(m.group(1)) * (1024 if m.group(2) == "Gi" else 1)
        return f"{value.normalize():f}Mi"

    return _QUANTITY.sub(one, text)


def binary_units(text: str) -> str:
    """2Gi → 2 GiB."""
    return _QUANTITY.sub(lambda m: f"{m.group(1)} {m.group(2)}B", text)


def spaced_percent(text: str) -> str:
    """80% → 80 %."""
    return _PERCENT.sub(lambda m: f"{m.group(1)} %", text)


def percent_word(text: str) -> str:
    """80% → 80 percent."""
    return _PERCENT.sub(lambda m: f"{m.group(1)} percent", text)


def fraction(text: str) -> str:
    """80% → 0.8."""
    return _PERCENT.sub(lambda m: f"{(Decimal(m.group(1)) / 100).normalize():f}", text)


# Behaviour words the expert writes → a common synonym (behaviors.yaml `synonyms` and everyday ones).
SYNONYMS = {
    "not the cause": "a red herring",
    "Ruled out": "Set aside",
    "approve": "sign off on",
    "escalate": "hand over",
    "risks": "puts at risk",
    "destructive": "irreversible",
    "rising steadily": "growing steadily",
    "Findings": "Observations",
}


def synonyms(text: str) -> str:
    for word, other in SYNONYMS.items():
        text = re.sub(rf"\b{re.escape(word)}\b", other, text)
    return text


NUMBERS: dict[str, Words] = {
    "2.00Gi": two_decimals,
    "in Mi": in_mebibytes,
    "GiB": binary_units,
    "80 %": spaced_percent,
    "80 percent": percent_word,
    "0.8": fraction,
}

Rewrite = Callable[[EvidenceBundle], EvidenceBundle]
REWRITES: dict[str, Rewrite] = {
    **{f"kubectl {n}": partial(respell_actions, spelling=s) for n, s in SPELLINGS.items()},
    **{f"kubectl {n} as text": partial(respell_actions, spelling=s, text=True) for n, s in SPELLINGS.items()},
    **{f"numbers {n}": partial(rewrite_words, words=w) for n, w in NUMBERS.items()},
    "synonyms": partial(rewrite_words, words=synonyms),
    "trail in audit_trail": trail_in_list,
    "trail in numbered lines": trail_in_lines,
    "trail in numbered lines, Step N: and labelled lines": partial(trail_in_lines, layout=step_heading),
    "trail in numbered lines, parentheses": partial(trail_in_lines, layout=parentheses),
    "trail in numbered lines, bars": partial(trail_in_lines, layout=bars),
    # The trail's commands spelled otherwise than the actions' arguments: joined as the same command.
    "trail in audit_trail, respelled": partial(trail_in_list, naming=as_called(SPELLINGS["everything"])),
    "trail in numbered lines, respelled": partial(trail_in_lines, naming=as_called(SPELLINGS["everything"])),
    "trail in audit_trail, delta values as strings": partial(trail_in_list, delta=strings),
    "trail in audit_trail, delta as key=value text": partial(trail_in_list, delta=key_equals_value),
    # The trail named by the action expressions the agent wrote on its actions (`get metrics`).
    "trail in audit_trail, action expressions": partial(trail_in_list, naming=as_expression),
    "trail in numbered lines, action expressions": partial(trail_in_lines, naming=as_expression),
    "all at once": lambda b: trail_in_lines(
        rewrite_words(
            respell_actions(b, SPELLINGS["everything"], text=True),
            lambda t: synonyms(in_mebibytes(spaced_percent(t))),
        ),
        as_called(SPELLINGS["flags first"]),
    ),
}
