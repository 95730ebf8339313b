"""`oasis completion bash|zsh`: shell completion, answered from the command's own argparse tree.

The scripts are small: they call the hidden `oasis __complete WORD... CURRENT`, which walks the parsers
(commands, their flags, the choices of a flag, the kubeconfig's contexts for `--context`) and prints one
candidate a line and then `:DIRECTIVE`, the protocol of cobra, kubectl's own completion. kubectl asks a
plugin's completion the same way: `kubectl_complete-oasis` (a console script) answers for `kubectl oasis`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from oasis_operator.cli.common import command

SHELLS = ("bash", "zsh")
# cobra's ShellCompDirective values the scripts (and kubectl) understand.
DIRECTIVE_DEFAULT = 0  # the shell may complete file names
DIRECTIVE_NO_FILES = 4  # only the candidates given

BASH = r"""# bash completion for oasis (and kubectl-oasis); `source <(oasis completion bash)`
_oasis_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}" out directive
    out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
    directive="${out##*:}"
    out="${out%:*}"
    COMPREPLY=()
    local IFS=$'\n'
    if [[ -n "$out" ]]; then
        COMPREPLY=($(compgen -W "$out" -- "$cur"))
    elif [[ "$directive" != 4 ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        compopt -o filenames 2>/dev/null
    fi
}
complete -F _oasis_complete oasis kubectl-oasis
"""

ZSH = r"""#compdef oasis kubectl-oasis
# zsh completion for oasis (and kubectl-oasis); `source <(oasis completion zsh)`, or save it as _oasis
# in a directory of $fpath
_oasis() {
    local -a lines candidates
    local directive
    lines=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    directive="${lines[-1]#:}"
    candidates=("${(@)lines[1,-2]}")
    candidates=("${(@)candidates:#}")
    if (( ${#candidates} )); then
        compadd -a candidates
    elif [[ "$directive" != 4 ]]; then
        _files
    fi
}
if [[ "${funcstack[1]}" == _oasis ]]; then
    _oasis "$@"
else
    compdef _oasis oasis kubectl-oasis
fi
"""

EXAMPLES = [
    "# bash, this shell only",
    "source <(oasis completion bash)",
    "# bash, every new shell",
    "oasis completion bash > ~/.local/share/bash-completion/completions/oasis",
    "# zsh (compinit loaded)",
    "source <(oasis completion zsh)",
]


def register(subparsers: Any) -> None:
    comp = command(
        subparsers,
        "completion",
        help="print the shell completion script for bash or zsh",
        description="Prints a completion script for `oasis` and `kubectl-oasis`. It asks `oasis` itself "
        "for the candidates, so it knows every command, flag and choice of the installed version. For "
        "`kubectl oasis` completion kubectl calls `kubectl_complete-oasis` (installed with the package).",
        examples=EXAMPLES,
    )
    comp.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")
    comp.set_defaults(func=_completion)


def _completion(args: argparse.Namespace) -> int:
    sys.stdout.write(BASH if args.shell == "bash" else ZSH)
    return 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and bool(action.option_strings)


def _contexts() -> list[str]:
    try:
        import kubernetes  # noqa: PLC0415

        # $KUBECONFIG read now (the library's default is read once, when it is imported)
        config_file = os.environ.get("KUBECONFIG") or None
        contexts, _ = kubernetes.config.list_kube_config_contexts(config_file)  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 - no kubeconfig: nothing to offer
        return []
    return [str(c.get("name")) for c in contexts or []]


def _values(action: argparse.Action) -> tuple[list[str], int]:
    if action.choices is not None:
        return [str(c) for c in action.choices], DIRECTIVE_NO_FILES
    if "--context" in action.option_strings:
        return _contexts(), DIRECTIVE_NO_FILES
    return [], DIRECTIVE_DEFAULT


def completions(parser: argparse.ArgumentParser, words: Sequence[str]) -> tuple[list[str], int]:
    """The candidates for the last of `words` (the word being typed, maybe empty) and the directive."""
    *before, current = list(words) or [""]
    pending: argparse.Action | None = None  # a flag whose value is the next word
    for word in before:
        if pending is not None:
            pending = None
            continue
        options = parser._option_string_actions
        if word.startswith("-") and "=" not in word and word in options:
            pending = options[word] if _takes_value(options[word]) else None
        elif not word.startswith("-") and word in _subparsers(parser):
            parser = _subparsers(parser)[word]
    if pending is not None:
        candidates, directive = _values(pending)
    elif current.startswith("-"):
        candidates = [
            flag
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
        ]
        directive = DIRECTIVE_NO_FILES
    elif _subparsers(parser):
        candidates, directive = list(_subparsers(parser)), DIRECTIVE_NO_FILES
    else:
        positional = [a for a in parser._actions if not a.option_strings and a.choices is not None]
        candidates = [str(c) for a in positional for c in a.choices or ()]
        directive = DIRECTIVE_NO_FILES if candidates else DIRECTIVE_DEFAULT
    return [c for c in candidates if c.startswith(current)], directive


def print_completions(parser: argparse.ArgumentParser, words: Sequence[str]) -> int:
    """`oasis __complete WORD... CURRENT`: candidates one a line, then `:DIRECTIVE`."""
    candidates, directive = completions(parser, words)
    sys.stdout.write("".join(f"{c}\n" for c in candidates) + f":{directive}\n")
    return 0
