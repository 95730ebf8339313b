"""A kubectl command line read as kubectl reads it: the one parser of commands the engine has.

kubectl (cobra/pflag) accepts its flags anywhere on the line, before or after the command words, as
``--flag value``, ``--flag=value``, ``-f value``, ``-fvalue`` or ``-f=value``, boolean short flags
clustered (``-it``), and ends flag parsing at ``--`` (what follows is the command of ``exec``/``run``/
``debug``). Whether a flag takes a value decides where the next word belongs, so the tables below list
the flags with a value and the boolean ones; a few short flags mean something else per command
(``logs -f`` follows, ``logs -p`` shows the previous container). Flags whose value is optional
(``--dry-run``, ``--validate``, ``--cascade``) take one only as ``--flag=value``, as in kubectl.

After the flags come the command words (``get``; ``rollout restart``; ``set image``; ``create secret
generic``; ``top pod``; ``auth can-i``; ``config view``), then the targets: ``type/name [type/name ...]``
or ``type[,type] [name ...]``, where a type is a plural, a singular, a kind, a short name (``deploy``,
``po``, ``svc``, ``cm``: ``models/kinds.py`` ``SHORT_NAMES``) or ``all``, optionally group-qualified
(``deployments.apps``). Commands that name their type in the command word (``create deployment x``,
``top pod x``, ``logs x``, ``exec x``, ``drain x``) get it from there. Types come out as Kubernetes
plurals (``deployments``), the names the gateway's record uses.

A line may hold several commands (``&&``, ``;``, ``|``) and a shell may be given one as a script
(``bash -c '…'``): each kubectl command among them is one call. Pure: no I/O; an input that is not a
kubectl command line gives no call.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from oasis_operator.engine.kubectl_flags import (
    COMMAND_ALIASES,
    COMMAND_BOOL_FLAGS,
    COMMAND_SHORT_FLAGS,
    IMPLIED_TYPE,
    NO_TARGETS,
    SHORT_FLAGS,
    SUBCOMMANDS,
    THIRD_WORDS,
    VALUE_FLAGS,
)
from oasis_operator.models.kinds import CATEGORY_ALL, SHORT_NAMES, TABLE

_ALIASES = {"kubectl", "k", "kubectl.exe", "kubecolor"}
_SEPARATORS = {"|", "||", "&&", ";", "&"}
_SHELLS = {"sh", "bash", "zsh", "dash"}


@dataclass(frozen=True)
class Target:
    """One object (or, without a name, every object) of a resource a command addresses."""

    resource: str  # Kubernetes plural (`deployments`), or the word as written for a type kubectl serves
    name: str | None = None


@dataclass(frozen=True)
class KubectlCall:
    """One kubectl invocation, as kubectl itself reads it."""

    command: tuple[str, ...]  # ("get",), ("rollout", "restart"), ("create", "secret", "generic")
    targets: tuple[Target, ...] = ()
    flags: tuple[tuple[str, str], ...] = ()  # (long name, value) in order; booleans as "true"
    args: tuple[str, ...] = ()  # other positionals: label changes, `container=image`, `KEY=value`, ...
    after_dashdash: tuple[str, ...] = ()  # the command of `exec`/`run`/`debug`

    @property
    def verb(self) -> str:
        return self.command[0] if self.command else ""

    def flag(self, name: str) -> str | None:
        """The last value given for a long flag name, or None."""
        values = [v for k, v in self.flags if k == name]
        return values[-1] if values else None

    @property
    def namespace(self) -> str | None:
        return self.flag("namespace")

    @property
    def all_namespaces(self) -> bool:
        return (self.flag("all-namespaces") or "false").lower() != "false"

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.resource for t in self.targets))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets if t.name)


def _singular(plural: str) -> str:
    if plural.endswith("ies"):
        return plural[:-3] + "y"
    if plural.endswith(("sses", "xes")):
        return plural[:-2]
    return plural if plural == "endpoints" else plural.removesuffix("s")


def _resource_names() -> dict[str, str]:
    """Every word kubectl takes for a type → its Kubernetes plural."""
    names: dict[str, str] = {}
    for row in TABLE:
        if not row.resources:
            continue
        for word in (*row.resources, row.type, row.kind.lower() if row.kind else None):
            if word:
                names.setdefault(word, row.plural)
    for plural, shorts in SHORT_NAMES.items():
        for word in (plural, _singular(plural), *shorts):
            names.setdefault(word, plural)
    return names


RESOURCE_NAMES: dict[str, str] = _resource_names()


def resource_of(word: str) -> str:
    """The Kubernetes plural a kubectl type word names (`deploy`, `Deployment`, `deployments.apps` →
    `deployments`); an unknown word as written (lower case, group dropped)."""
    text = word.strip().lower()
    if text in RESOURCE_NAMES:
        return RESOURCE_NAMES[text]
    base = text.split(".", 1)[0]
    return RESOURCE_NAMES.get(base, base)


def _words(command: str | Sequence[object]) -> list[str]:
    if isinstance(command, str):
        text = command.strip().strip("`").strip()
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        try:
            return list(lexer)
        except ValueError:  # an unbalanced quote: read the words as they stand
            return text.split()
    return [str(w) for w in command]


def _segments(words: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [s for s in out if s]


def _strip_program(words: list[str], assume: bool) -> list[str] | None:
    """The words after `kubectl` (a path to it, `k`, environment assignments before it), or None."""
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]):
        i += 1
    if i < len(words) and words[i].rsplit("/", 1)[-1].lower() in _ALIASES:
        return words[i + 1 :]
    return words[i:] if assume else None


class _Reader:
    """Splits words into flags and positionals as pflag does (flags anywhere, `--` ends them)."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.flags: list[tuple[str, str]] = []
        self.positionals: list[str] = []
        self.after: list[str] = []

    def read(self) -> None:
        i = 0
        words = self.words
        while i < len(words):
            word = words[i]
            if word == "--":
                self.after = words[i + 1 :]
                return
            if word.startswith("--") and len(word) > 2:
                i = self._long(word[2:], i)
            elif word.startswith("-") and len(word) > 1 and not _is_number(word):
                i = self._short(word[1:], i)
            else:
                self.positionals.append(word)
            i += 1

    def _next(self, i: int) -> tuple[str, int]:
        if i + 1 < len(self.words):
            return self.words[i + 1], i + 1
        return "", i

    def _long(self, body: str, i: int) -> int:
        name, eq, value = body.partition("=")
        if eq:
            self.flags.append((name, value))
        elif name in VALUE_FLAGS and name not in COMMAND_BOOL_FLAGS.get(self._command(), frozenset()):
            value, i = self._next(i)
            self.flags.append((name, value))
        else:  # boolean, optional-value, or unknown: kubectl needs `=` for a value there
            self.flags.append((name, "true"))
        return i

    def _command(self) -> str:
        return self.positionals[0] if self.positionals else ""

    def _short(self, body: str, i: int) -> int:
        shorts = {**SHORT_FLAGS, **COMMAND_SHORT_FLAGS.get(self._command(), {})}
        j = 0
        while j < len(body):
            name = shorts.get(body[j], body[j])
            if name in VALUE_FLAGS:
                rest = body[j + 1 :]
                if rest.startswith("="):
                    rest = rest[1:]
                if rest:
                    self.flags.append((name, rest))
                else:
                    value, i = self._next(i)
                    self.flags.append((name, value))
                return i
            self.flags.append((name, "true"))
            j += 1
        return i


def _is_number(word: str) -> bool:
    return bool(re.match(r"^-\d+(\.\d+)?$", word))


def _command_words(positionals: list[str]) -> tuple[tuple[str, ...], list[str]]:
    if not positionals:
        return (), []
    first, rest = positionals[0], positionals[1:]
    words = [first]
    below = SUBCOMMANDS.get(first)
    if below is not None and rest and rest[0] in below:
        word = rest.pop(0)
        words.append(COMMAND_ALIASES.get(first, {}).get(word, word))
        third = THIRD_WORDS.get((first, words[1]))
        if third is not None and rest and rest[0] in third:
            words.append(rest.pop(0))
    return tuple(words), rest


def _is_change(word: str) -> bool:
    """A positional that is a value, not an object: `key=value`, `key-` (label removal), `c=image`."""
    return "=" in word or (word.endswith("-") and len(word) > 1) or word.startswith("/") or ":" in word


def _targets(command: tuple[str, ...], args: list[str]) -> tuple[list[Target], list[str]]:
    verb = command[0] if command else ""
    if verb in NO_TARGETS or not command:
        return [], args
    if verb == "events":
        return [Target("events")], args
    if verb == "top" and len(command) > 1:
        plural = resource_of(command[1])
        return [Target(plural, a) for a in args[:1]] or [Target(plural)], args[1:]
    if verb == "create" and len(command) > 1:
        plural = "serviceaccounts" if command[1] == "token" else resource_of(command[1])
        return [Target(plural, args[0] if args else None)], args[1:]
    if verb in IMPLIED_TYPE:
        if not args:
            return [Target(IMPLIED_TYPE[verb])], []
        kind, slash, name = args[0].partition("/")
        if verb == "cp":
            pods = [a.split(":", 1)[0].rsplit("/", 1)[-1] for a in args if ":" in a]
            return [Target("pods", p) for p in pods] or [Target("pods")], args
        if slash:
            return [Target(resource_of(kind), name)], args[1:]
        return [Target(IMPLIED_TYPE[verb], args[0])], args[1:]
    objects = [a for a in args if not _is_change(a)]
    changes = [a for a in args if _is_change(a)]
    if not objects:
        return [], changes
    if any("/" in a for a in objects):
        out = []
        for word in objects:
            kind, _, name = word.partition("/")
            out.extend(_expand(kind, name or None))
        return out, changes
    kinds, names = objects[0], objects[1:]
    out = []
    for kind in (k for k in kinds.split(",") if k):
        for name in names or [""]:
            out.extend(_expand(kind, name or None))
    return out, changes


def _expand(kind: str, name: str | None) -> list[Target]:
    if kind.lower() == "all":
        return [Target(plural, name) for plural in CATEGORY_ALL]
    return [Target(resource_of(kind), name)]


def parse_kubectl(command: str | Sequence[object], *, assume_kubectl: bool = False) -> list[KubectlCall]:
    """Every kubectl invocation in a command (a string, or argv words). Words after a shell separator
    (`|`, `&&`, `;`) start another command; those that are not kubectl give nothing, except a shell
    given a script (`sh -c '…'`, `bash -c`), whose script is read in turn. With `assume_kubectl`, words
    that do not start with `kubectl` are kubectl's arguments (a tool named kubectl given
    `["get", "pods"]`)."""
    calls: list[KubectlCall] = []
    for n, segment in enumerate(_segments(_words(command))):
        if len(segment) >= 3 and segment[0].rsplit("/", 1)[-1] in _SHELLS and segment[1] == "-c":
            calls.extend(parse_kubectl(segment[2]))
            continue
        words = _strip_program(segment, assume_kubectl and n == 0)
        if words is None:
            continue
        reader = _Reader(words)
        reader.read()
        words_, rest = _command_words(reader.positionals)
        if not words_:
            continue
        targets, args = _targets(words_, rest)
        calls.append(
            KubectlCall(
                command=words_,
                targets=tuple(targets),
                flags=tuple(reader.flags),
                args=tuple(args),
                after_dashdash=tuple(reader.after),
            )
        )
    return calls
