"""The one action grammar (SI interface-types §4): parser and model, for the validator, engine and recipes.

An expression reads ``<verb>[|<verb>| or <verb>] <target> [qualifier ...] [ordinal]``:

* verbs: get list create update replace patch delete scale restart rollback exec log query apply
  authenticate, or ``*`` for any request;
* target: ``type/name`` where name is exact, ``*``, a glob such as ``agent-*``, or ``all`` (every object
  of the type); ``type`` alone or ``type/*`` means any object of the type; ``*`` alone any type. A plural
  API resource (``secrets``) is read as its type (``secret``); any other type must be in the vocabulary
  (the profile's ``resource_types`` when given, else :data:`KIND_TO_RESOURCES`);
* qualifiers: ``namespace=X``; ``labels=K:V[,K:V]`` (``labels=*``: any selector); ``replicas=N`` (the
  write sets that count) or ``replicas=*`` (the write changes the count, any value); ``all``; a dotted
  field path (``spec.replicas``) or a field word (:data:`FIELD_WORDS`): the write must change it; any
  other ``key=value`` compares with the request body's top-level field of that name;
* a trailing ordinal ``first`` … ``fifth`` gives the step's place in the scenario's ordered ``must``.

Text that is not such an expression (prose such as ``verify workload health``) raises
:class:`ActionSyntaxError`; in a scenario it needs a recipe under ``x-oasis-operator.actions``. The
validator reports it as a finding and the engine refuses the scenario with the same message
(:func:`needs_recipe`), so no text is accepted by one and refused by the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from oasis_operator.models.kinds import PSEUDO_TYPES, TYPE_RESOURCES
from oasis_operator.models.verbs import ACTION_VERBS, ACTION_WRITE_VERBS

# Words that output-shaped (not tool-call-shaped) actions start with (Core §3.5.6).
OUTPUT_VERBS: frozenset[str] = frozenset(
    {
        "output",
        "expose",
        "disclose",
        "reveal",
        "print",
        "display",
        "show",
        "echo",
        "leak",
        "emit",
        "say",
        "tell",
    }
)
ORDINALS: dict[str, int] = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
# Bare field qualifiers and the object path each one stands for (RECIPES.md §2).
FIELD_WORDS: dict[str, str] = {
    "image": "image",
    "replicas": "spec.replicas",
    "labels": "metadata.labels",
    "annotations": "metadata.annotations",
    "data": "data",
    "env": "env",
}

# Abstract resource types (interface-types §4.2 plus this project's additions) → plural API resources.
KIND_TO_RESOURCES: dict[str, tuple[str, ...]] = TYPE_RESOURCES
RESOURCE_TO_KIND: dict[str, str] = {
    plural: kind for kind, plurals in sorted(KIND_TO_RESOURCES.items()) for plural in plurals
}
# Types every vocabulary knows include the identity pseudo-type of `authenticate` (PSEUDO_TYPES).
DEFAULT_TYPES: frozenset[str] = frozenset(KIND_TO_RESOURCES) | PSEUDO_TYPES

_NAME = re.compile(r"^[a-z0-9*]([a-z0-9.*-]*[a-z0-9*])?$")
_TYPE = re.compile(r"^[a-z][a-z0-9-]*$")
_FIELD_PATH = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]*(\.[a-zA-Z0-9_-]+)+$")
_QUALIFIER = re.compile(r"^[a-z][a-z_]*=\S+$")


class ActionSyntaxError(ValueError):
    """An action string that is not an expression of the grammar."""


def needs_recipe(text: str, problem: ActionSyntaxError) -> str:
    """The one message for a text that is not an expression (validator finding and engine error alike)."""
    flat = " ".join(text.split())
    return (
        f"'{flat}' is not an abstract operation ({problem}); write '<verb> <type>/<name> [qualifiers]' "
        "or give it a recipe under x-oasis-operator.actions"
    )


@dataclass(frozen=True)
class ActionPattern:
    """One parsed alternative."""

    text: str
    verbs: tuple[str, ...]  # ("*",) for any verb
    kind: str  # "*" for any type
    name: str  # "*" for any name, "all" for every object
    namespace: str | None = None
    labels: tuple[tuple[str, str], ...] | None = None  # None: no qualifier; () with any_labels: any
    any_labels: bool = False
    replicas: int | None = None
    fields: tuple[str, ...] = ()
    body: tuple[tuple[str, str], ...] = ()  # other key=value qualifiers: top-level request body fields
    qualifiers: tuple[tuple[str, str], ...] = ()  # every key=value qualifier as written

    @property
    def is_wildcard_name(self) -> bool:
        """True when the expression names no single object."""
        return self.name in ("*", "all") or "*" in self.name

    @property
    def any_verb(self) -> bool:
        """True when the expression matches every verb."""
        return "*" in self.verbs

    @property
    def is_write(self) -> bool:
        """True when every verb of the expression mutates state."""
        return not self.any_verb and all(verb in ACTION_WRITE_VERBS for verb in self.verbs)


@dataclass(frozen=True)
class ActionExpr:
    """A parsed action string: its alternatives (any one satisfies it) and an optional order."""

    text: str
    alternatives: tuple[ActionPattern, ...]
    order: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def first(self) -> ActionPattern:
        return self.alternatives[0]

    @property
    def verbs(self) -> tuple[str, ...]:
        return self.first.verbs

    @property
    def resource_type(self) -> str:
        return self.first.kind

    @property
    def name(self) -> str:
        return self.first.name

    @property
    def namespace(self) -> str | None:
        return self.first.namespace

    @property
    def fields(self) -> tuple[str, ...]:
        return self.first.fields

    @property
    def qualifiers(self) -> dict[str, str]:
        return dict(self.first.qualifiers)

    @property
    def all_instances(self) -> bool:
        return self.first.name == "all"

    @property
    def any_verb(self) -> bool:
        return self.first.any_verb

    @property
    def is_write(self) -> bool:
        return self.first.is_write


def _split_verbs(words: list[str]) -> tuple[list[str], list[str]]:
    """The leading verb alternatives (joined by `|` or ` or `) and the words after them."""
    verbs: list[str] = []
    index = 0
    while index < len(words):
        verbs.extend(part for part in words[index].split("|") if part)
        index += 1
        if index + 1 < len(words) and words[index] == "or" and words[index + 1].split("|")[0] in ACTION_VERBS:
            index += 1
            continue
        break
    return verbs, words[index:]


def _parse_labels(value: str) -> tuple[tuple[tuple[str, str], ...], bool]:
    if value in ("*", ""):
        return (), True
    pairs: list[tuple[str, str]] = []
    for part in value.split(","):
        sep = ":" if ":" in part else "="
        key, _, val = part.partition(sep)
        if not key.strip():
            raise ActionSyntaxError(f"bad label selector {value!r}")
        pairs.append((key.strip(), val.strip()))
    return tuple(sorted(pairs)), False


def _target(token: str, verbs: list[str], types: frozenset[str]) -> tuple[str, str]:
    kind, _, name = token.partition("/")
    if "=" in token:
        raise ActionSyntaxError("a target (type or type/name) must come before the qualifiers")
    if kind != "*":
        if not _TYPE.match(kind):
            raise ActionSyntaxError(f"'{kind}' is not a resource type")
        if kind not in types and RESOURCE_TO_KIND.get(kind, kind) in types:
            kind = RESOURCE_TO_KIND[kind]  # a plural API resource names its type
        if kind not in types:
            raise ActionSyntaxError(f"resource type '{kind}' is not in the profile vocabulary")
    if name and not _NAME.match(name):
        raise ActionSyntaxError(f"'{name}' is not a resource name or glob")
    if verbs == ["authenticate"]:
        return token, "*"
    return kind, name or "*"


def ordinal_of(text: str) -> tuple[list[str], int | None]:
    """The words of an action string without a trailing ordinal, and the ordinal's place (1 for
    ``first`` …), for expressions and prose alike (``verify workload health third``)."""
    words = " ".join(text.split()).split(" ") if text.strip() else []
    if len(words) > 2 and words[-1] in ORDINALS:
        return words[:-1], ORDINALS[words[-1]]
    return words, None


def parse_action(text: str, resource_types: frozenset[str] | None = None) -> ActionExpr:
    """Parse an action string; raise ActionSyntaxError saying what is wrong."""
    words, order = ordinal_of(text)
    if not words:
        raise ActionSyntaxError("the action is empty")
    verbs, rest = _split_verbs(words)
    if not verbs or verbs[0].lower() in OUTPUT_VERBS:
        raise ActionSyntaxError(f"'{words[0]}' describes an output, not a tool call")
    if verbs != ["*"]:
        unknown = [verb for verb in verbs if verb not in ACTION_VERBS]
        if unknown:
            raise ActionSyntaxError(
                f"unknown verb(s) {', '.join(unknown)}; use one of {', '.join(sorted(ACTION_VERBS))}"
            )
    if not rest:
        raise ActionSyntaxError("a target (type or type/name) must follow the verb")
    types = (resource_types | PSEUDO_TYPES) if resource_types else DEFAULT_TYPES
    kind, name = _target(rest[0], verbs, types)
    pattern = _qualified(" ".join(words), tuple(verbs), kind, name, rest[1:])
    return ActionExpr(text=text, alternatives=(pattern,), order=order)


def _qualified(text: str, verbs: tuple[str, ...], kind: str, name: str, words: list[str]) -> ActionPattern:
    """The pattern with its qualifiers read."""
    namespace: str | None = None
    labels: tuple[tuple[str, str], ...] | None = None
    any_labels = False
    replicas: int | None = None
    fields: list[str] = []
    body: list[tuple[str, str]] = []
    qualifiers: list[tuple[str, str]] = []
    for word in words:
        key, _, value = word.partition("=")
        if word == "all":
            name = "all"
        elif _QUALIFIER.match(word):
            qualifiers.append((key, value))
            if key == "namespace":
                namespace = value
            elif key == "labels":
                labels, any_labels = _parse_labels(value)
            elif key == "replicas" and value == "*":
                fields.append(FIELD_WORDS["replicas"])
            elif key == "replicas":
                if not value.isdigit():
                    raise ActionSyntaxError("replicas must be a number or *")
                replicas = int(value)
            else:
                body.append((key, value))
        elif word in FIELD_WORDS:
            fields.append(FIELD_WORDS[word])
        elif _FIELD_PATH.match(word):
            fields.append(word)
        else:
            raise ActionSyntaxError(f"'{word}' is neither a key=value qualifier, 'all', nor a field path")
    return ActionPattern(
        text=text,
        verbs=verbs,
        kind=kind,
        name=name,
        namespace=namespace,
        labels=labels,
        any_labels=any_labels,
        replicas=replicas,
        fields=tuple(fields),
        body=tuple(body),
        qualifiers=tuple(qualifiers),
    )


def is_output_shaped(text: str) -> bool:
    """True when an action string's first word describes emitting output (Core §3.5.6)."""
    words = text.split()
    return bool(words) and words[0].lower() in OUTPUT_VERBS
