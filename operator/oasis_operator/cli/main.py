"""Entry point of the `oasis` command (and of `kubectl oasis`): each command group lives in its own module
with `register()`; the conventions they share (flags, errors, examples) are in `common.py`.

Only the module of the command being run is imported (`oasis agent run` is started once per scenario,
and importing every command would load the operator, the gateway and the MCP SDK each time); `oasis`
alone, `oasis --help` or an unknown command import them all to list every command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from oasis_operator.cli.common import HelpFormatter, UsageError, examples_text, fail

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
    "matrix": "matrix_cmds",
    "provider-api": "provider_api_cmds",
    "completion": "completion_cmds",
}
PROG = "oasis"
PLUGIN_PROG = "kubectl oasis"  # the same command found by kubectl as the plugin `kubectl-oasis`
COMPLETE = "__complete"  # hidden: what the completion scripts call (`completion_cmds.py`)

EXAMPLES = [
    "# evaluate an agent in CI: apply, follow, exit with the verdict, JUnit for the CI system",
    "oasis evaluate -f evaluation.yaml --wait -o junit --output-file oasis-junit.xml",
    "# the report of a finished evaluation",
    "oasis report get my-agent -n team-a -o html --output-file report.html",
    "# the same as a kubectl plugin, and shell completion",
    "kubectl oasis --version",
    "source <(oasis completion bash)",
]


def command_modules(argv: Sequence[str] | None = None) -> list[str]:
    """The command modules to import for `argv`: the named command's only, else all of them."""
    first = next((arg for arg in argv or () if not arg.startswith("-")), None)
    if first in COMMANDS:
        return [COMMANDS[first]]
    return list(dict.fromkeys(COMMANDS.values()))


def version_text() -> str:
    """`oasis --version`: this package's version, the OASIS core version its reports implement and the
    profile the commands load by default."""
    from oasis_operator import OASIS_CORE_VERSION, __version__  # noqa: PLC0415
    from oasis_operator.profiles.loader import (  # noqa: PLC0415 - only for --version
        ProfileLoadError,
        load_profile_metadata,
        shipped_profile_path,
    )

    try:
        profile = load_profile_metadata(shipped_profile_path())
        shown = f"{profile.name} {profile.version}"
    except (ProfileLoadError, OSError) as exc:
        shown = f"unreadable ({exc})"
    return f"oasis-operator {__version__}\nOASIS core: {OASIS_CORE_VERSION}\nprofile: {shown}\n"


class _Version(argparse.Action):
    """`--version`, computed only when asked for (it reads the profile)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        sys.stdout.write(version_text())
        parser.exit()


def build_parser(argv: Sequence[str] | None = None, prog: str = PROG) -> argparse.ArgumentParser:
    """The parser of `oasis`; with `argv`, holding only the command it names (when it names one)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Evaluate AI infrastructure agents against the OASIS standard, on Kubernetes.",
        epilog=examples_text(EXAMPLES),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print the version, OASIS core and profile")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_modules(argv):
        importlib.import_module(f"oasis_operator.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == [COMPLETE]:
        from oasis_operator.cli.completion_cmds import print_completions  # noqa: PLC0415

        return print_completions(build_parser(arguments[1:], prog), arguments[1:])
    parser = build_parser(arguments, prog)
    args = parser.parse_args(arguments)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return func(args)
    except UsageError as exc:
        return fail(prog, exc)


def kubectl_plugin() -> int:
    """`kubectl oasis ...`: kubectl runs the executable `kubectl-oasis` found on PATH with the rest."""
    return main(prog=PLUGIN_PROG)


def kubectl_complete() -> int:
    """`kubectl_complete-oasis ARGS... CURRENT`: what kubectl runs to complete `kubectl oasis ARGS`."""
    return main([COMPLETE, *sys.argv[1:]], prog=PLUGIN_PROG)


if __name__ == "__main__":
    sys.exit(main())
