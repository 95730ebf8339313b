"""Entry point of the `oasis` command: each command group lives in its own module with `register()`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

# Modules that add sub-commands. Each exposes `register(subparsers)` and sets `func` on its parsers.
COMMAND_MODULES: tuple[str, ...] = (
    "cluster_cmds",
    "crd_cmds",
    "operator_cmds",
    "profile_cmds",
    "engine_cmds",
    "agent_cmds",
    "gateway_cmds",
    "containment_cmds",
    "evaluate_cmds",
    "provider_api_cmds",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oasis", description="Evaluate AI infrastructure agents (OASIS).")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"oasis_operator.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
