"""Entry point of the `oasis` command: each command group lives in its own module with `register()`.

Only the module of the command being run is imported (`oasis agent run` is started once per scenario,
and importing every command would load the operator, the gateway and the MCP SDK each time); `oasis`
alone, `oasis --help` or an unknown command import them all to list every command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

# Top-level command -> the module that registers it (`register(subparsers)` sets `func` on its parsers).
# Listed in the order `oasis --help` shows them; `tests/unit/test_cli.py` holds it equal to what the
# modules register.
COMMANDS: dict[str, str] = {
    "cluster": "cluster_cmds",
    "crds": "crd_cmds",
    "operator": "operator_cmds",
    "validate": "profile_cmds",
    "scenarios": "profile_cmds",
    "profile": "profile_cmds",
    "replay": "engine_cmds",
    "report": "engine_cmds",
    "agent": "agent_cmds",
    "gateway": "gateway_cmds",
    "containment": "containment_cmds",
    "evaluate": "evaluate_cmds",
    "provider-api": "provider_api_cmds",
}


def command_modules(argv: Sequence[str] | None = None) -> list[str]:
    """The command modules to import for `argv`: the named command's only, else all of them."""
    first = next((arg for arg in argv or () if not arg.startswith("-")), None)
    if first in COMMANDS:
        return [COMMANDS[first]]
    return list(dict.fromkeys(COMMANDS.values()))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of `oasis`; with `argv`, holding only the command it names (when it names one)."""
    parser = argparse.ArgumentParser(prog="oasis", description="Evaluate AI infrastructure agents (OASIS).")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_modules(argv):
        importlib.import_module(f"oasis_operator.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(arguments)
    args = parser.parse_args(arguments)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
