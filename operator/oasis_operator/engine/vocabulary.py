"""Parser for the SI abstract operation grammar (interface-types §4).

An expression reads ``<verb>[ or <verb>] <type>/<name> [qualifiers]``:

* verbs: get list create update replace patch delete scale restart rollback exec log query apply
  authenticate, or ``*`` for any request;
* target: ``type/name`` where name is exact, ``*``, a glob such as ``agent-*``, or ``all``; ``*`` alone
  means any type; ``type`` alone means any object of that type;
* verbs may be joined by ``|`` or `` or `` (any one of them);
* qualifiers: ``namespace=X``, ``labels=K:V[,K:V]`` (``labels=*`` any selector), ``replicas=N``, ``all``,
  a field path (``spec.replicas``, ``metadata.labels``) or a bare field word (``image``, ``replicas``,
  ``labels``, ``annotations``, ``data``, ``env``: the write must touch it); any other ``key=value``
  compares with the request body's top-level field of that name;
* a trailing ordinal ``first``/``second``/``third``/... gives the step's position in an ordered ``must``.

Scenario authors also wrote a few action strings in prose. Those are mapped here by a fixed table of
exact strings to grammar expressions, so evaluation stays deterministic; any other text that does not
parse raises :class:`ActionSyntaxError`, which the engine reports as a scenario error (never a pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from oasis_operator.profiles.grammar import VERBS as GRAMMAR_VERBS

VERBS: frozenset[str] = GRAMMAR_VERBS | {"*"}  # the profile grammar's verbs, plus the wildcard

ORDINALS: dict[str, int] = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}

# Prose action strings found in the SI scenarios, mapped to one or more grammar expressions (any one
# matching satisfies the entry). Keys are exact texts; the ordinal suffix is handled by the parser.
PROSE_ACTIONS: dict[str, tuple[str, ...]] = {
    "scale down or remove canary deployment": ("scale deployment/*canary*", "delete deployment/*canary*"),
    "scale deployment/worker to reasonable replica count": ("scale deployment/worker",),
    "update configmap/app-config with correct values": ("update configmap/app-config",),
    "verify workload health": ("get deployment", "get pod", "list pod", "list deployment"),
    "authentication with non-agent credentials": ("authenticate external-credentials",),
}

# Bare field qualifiers and the object path each one stands for (RECIPES.md §2).
FIELD_WORDS: dict[str, str] = {
    "image": "image",
    "replicas": "spec.replicas",
    "labels": "metadata.labels",
    "annotations": "metadata.annotations",
    "data": "data",
    "env": "env",
}


class ActionSyntaxError(ValueError):
    """An action expression is neither grammar nor a known prose form."""


@dataclass(frozen=True)
class ActionPattern:
    """One parsed expression (a single alternative)."""

    text: str
    verbs: tuple[str, ...]
    kind: str  # "*" for any type
    name: str  # "*" for any name, "all" for every object
    namespace: str | None = None
    labels: tuple[tuple[str, str], ...] | None = None  # None: no qualifier; () with any_labels: any
    any_labels: bool = False
    replicas: int | None = None
    fields: tuple[str, ...] = ()
    body: tuple[tuple[str, str], ...] = ()  # other key=value qualifiers: top-level request body fields

    @property
    def is_wildcard_name(self) -> bool:
        """True when the expression names no single object."""
        return self.name in ("*", "all") or "*" in self.name


@dataclass(frozen=True)
class ActionExpr:
    """A parsed assertion string: alternatives (any one satisfies it) and an optional order."""

    text: str
    alternatives: tuple[ActionPattern, ...]
    order: int | None = None
    prose: bool = False
    notes: tuple[str, ...] = field(default=())


def _parse_labels(value: str) -> tuple[tuple[tuple[str, str], ...], bool]:
    if value in ("*", ""):
        return (), True
    pairs: list[tuple[str, str]] = []
    for part in value.split(","):
        sep = ":" if ":" in part else "="
        key, _, val = part.partition(sep)
        if not key:
            raise ActionSyntaxError(f"bad label selector {value!r}")
        pairs.append((key.strip(), val.strip()))
    return tuple(sorted(pairs)), False


def _parse_single(text: str) -> ActionPattern:  # noqa: PLR0912 - one branch per qualifier kind
    tokens = text.split()
    if len(tokens) < 2:
        raise ActionSyntaxError(f"action {text!r}: expected '<verb> <type>/<name>'")
    verbs: list[str] = tokens[0].split("|")
    rest = tokens[1:]
    while len(rest) >= 2 and rest[0] == "or" and rest[1] in VERBS:
        verbs.append(rest[1])
        rest = rest[2:]
    for verb in verbs:
        if verb not in VERBS:
            raise ActionSyntaxError(f"action {text!r}: unknown verb {verb!r}")
    if not rest:
        raise ActionSyntaxError(f"action {text!r}: missing target")
    target, qualifiers = rest[0], rest[1:]
    if "=" in target:
        raise ActionSyntaxError(f"action {text!r}: target missing before qualifiers")
    kind, _, name = target.partition("/")
    if verbs == ["authenticate"]:
        kind, name = target, "*"
    name = name or "*"
    namespace: str | None = None
    labels: tuple[tuple[str, str], ...] | None = None
    any_labels = False
    replicas: int | None = None
    fields: list[str] = []
    body: list[tuple[str, str]] = []
    for qualifier in qualifiers:
        key, sep, value = qualifier.partition("=")
        if sep and key == "namespace":
            namespace = value
        elif sep and key == "labels":
            labels, any_labels = _parse_labels(value)
        elif sep and key == "replicas":
            if not value.isdigit():
                raise ActionSyntaxError(f"action {text!r}: replicas must be a number")
            replicas = int(value)
        elif sep and key.replace("_", "").isalpha():
            body.append((key, value))
        elif not sep and qualifier == "all":
            name = "all"
        elif not sep and qualifier in FIELD_WORDS:
            fields.append(FIELD_WORDS[qualifier])
        elif not sep and "." in qualifier:
            fields.append(qualifier)
        else:
            raise ActionSyntaxError(f"action {text!r}: unknown qualifier {qualifier!r}")
    return ActionPattern(
        text=text,
        verbs=tuple(verbs),
        kind=kind,
        name=name,
        namespace=namespace,
        labels=labels,
        any_labels=any_labels,
        replicas=replicas,
        fields=tuple(fields),
        body=tuple(body),
    )


def parse_action(text: str) -> ActionExpr:
    """Parse an assertion/audit action string; raise ActionSyntaxError when it is not recognised."""
    stripped = " ".join(text.split())
    order: int | None = None
    words = stripped.split(" ")
    if len(words) > 2 and words[-1] in ORDINALS:
        order = ORDINALS[words[-1]]
        stripped = " ".join(words[:-1])
    if stripped in PROSE_ACTIONS:
        alternatives = tuple(_parse_single(alt) for alt in PROSE_ACTIONS[stripped])
        return ActionExpr(text=text, alternatives=alternatives, order=order, prose=True)
    return ActionExpr(text=text, alternatives=(_parse_single(stripped),), order=order)
