"""Parser for the SI abstract operation grammar (interface-types §4), used to check action strings.

Grammar accepted (this project's reading of §4, written out in RECIPES.md)::

    expression := verbs " " target (" " qualifier)*
    verbs      := "*" | verb (("|" | " or ") verb)*
    target     := "*" | type ["/" name]          name may contain "*" globs; "all" means every instance
    qualifier  := key "=" value | "all" | field  field: a dotted path or one of FIELD_NAMES

The parser only checks shape and vocabulary; matching audit entries by effect is the engine's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

VERBS: frozenset[str] = frozenset(
    {
        "get",
        "list",
        "create",
        "update",
        "replace",
        "patch",
        "delete",
        "scale",
        "restart",
        "rollback",
        "exec",
        "log",
        "query",
        "apply",
        "authenticate",
    }
)
READ_VERBS: frozenset[str] = frozenset({"get", "list", "log", "query"})
WRITE_VERBS: frozenset[str] = VERBS - READ_VERBS - {"authenticate"}

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

# Bare field qualifiers accepted without a dot (e.g. `patch deployment/x image`).
FIELD_NAMES: frozenset[str] = frozenset({"image", "replicas", "labels", "annotations", "data", "env"})

_NAME = re.compile(r"^[a-z0-9*]([a-z0-9.*-]*[a-z0-9*])?$")
_TYPE = re.compile(r"^[a-z][a-z0-9-]*$")
_FIELD_PATH = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]*(\.[a-zA-Z0-9_-]+)+$")
_QUALIFIER = re.compile(r"^[a-z][a-z_]*=\S+$")


class ActionSyntaxError(ValueError):
    """An action string that is not a strict expression of the grammar."""


@dataclass(frozen=True)
class ActionExpr:
    """A parsed action expression."""

    verbs: tuple[str, ...]  # ("*",) for any verb
    resource_type: str  # "*" for any type
    name: str | None  # None: no name given (whole type)
    qualifiers: dict[str, str] = field(default_factory=dict)
    fields: tuple[str, ...] = ()
    all_instances: bool = False

    @property
    def any_verb(self) -> bool:
        """True when the expression matches every verb."""
        return self.verbs == ("*",)

    @property
    def namespace(self) -> str | None:
        """The namespace qualifier, if given."""
        return self.qualifiers.get("namespace")

    @property
    def is_write(self) -> bool:
        """True when every verb of the expression mutates state."""
        return not self.any_verb and all(verb in WRITE_VERBS for verb in self.verbs)


def _split_verbs(text: str) -> tuple[list[str], str]:
    """Split the leading verb alternatives from the rest of the expression."""
    words = text.split()
    verbs: list[str] = []
    index = 0
    while index < len(words):
        verbs.extend(part for part in words[index].split("|") if part)
        index += 1
        if index < len(words) and words[index] == "or":
            index += 1
            continue
        break
    return verbs, " ".join(words[index:])


def parse_action(text: str, resource_types: frozenset[str] | None = None) -> ActionExpr:
    """Parse an action string strictly; raise ActionSyntaxError saying what is wrong."""
    stripped = " ".join(text.split())
    if not stripped:
        raise ActionSyntaxError("the action is empty")
    verbs, rest = _split_verbs(stripped)
    if verbs[0].lower() in OUTPUT_VERBS:
        raise ActionSyntaxError(f"'{verbs[0]}' describes an output, not a tool call")
    if verbs != ["*"]:
        unknown = [verb for verb in verbs if verb not in VERBS]
        if unknown:
            raise ActionSyntaxError(
                f"unknown verb(s) {', '.join(unknown)}; use one of {', '.join(sorted(VERBS))}"
            )
    tokens = rest.split()
    if not tokens:
        raise ActionSyntaxError("a target (type or type/name) must follow the verb")
    resource_type, _, name = tokens[0].partition("/")
    if resource_type != "*":
        if not _TYPE.match(resource_type):
            raise ActionSyntaxError(f"'{resource_type}' is not a resource type")
        if resource_types is not None and resource_type not in resource_types:
            raise ActionSyntaxError(f"resource type '{resource_type}' is not in the profile vocabulary")
    if name and not _NAME.match(name):
        raise ActionSyntaxError(f"'{name}' is not a resource name or glob")
    qualifiers, fields, all_instances = _qualifiers(tokens[1:])
    return ActionExpr(
        verbs=tuple(verbs),
        resource_type=resource_type,
        name=name or None,
        qualifiers=qualifiers,
        fields=tuple(fields),
        all_instances=all_instances or name == "all",
    )


def _qualifiers(words: list[str]) -> tuple[dict[str, str], list[str], bool]:
    """Split the words after the target into key=value qualifiers, field paths and the `all` flag."""
    qualifiers: dict[str, str] = {}
    fields: list[str] = []
    all_instances = False
    for word in words:
        if word == "all":
            all_instances = True
        elif _QUALIFIER.match(word):
            key, _, value = word.partition("=")
            qualifiers[key] = value
        elif word in FIELD_NAMES or _FIELD_PATH.match(word):
            fields.append(word)
        else:
            raise ActionSyntaxError(f"'{word}' is neither a key=value qualifier, 'all', nor a field path")
    return qualifiers, fields, all_instances


def is_output_shaped(text: str) -> bool:
    """True when an action string's first word describes emitting output (Core §3.5.6)."""
    words = text.split()
    return bool(words) and words[0].lower() in OUTPUT_VERBS
