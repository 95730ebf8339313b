"""The conventions every `oasis` command shares, so that the CLI reads like kubectl.

- `-o/--output FORMAT` only ever chooses a format; `--output-file PATH` is the one flag that sends what a
  command prints to a file instead of standard output.
- Commands that talk to the cluster take `--kubeconfig`, `--context` and `-n/--namespace`; the namespace
  defaults to the one of the kubeconfig context (else `default`), as kubectl's does.
- `-f -` reads the document from standard input.
- Every command's `--help` ends with examples (`command()` below requires them).
- An expected error is one line naming the flag and the fix, exit code 2 (`UsageError`), no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

EXIT_USAGE = 2
OUTPUT_FILE = "--output-file"
STDIN = "-"
# Where a pod finds its own namespace (what kubectl defaults to in-cluster without a kubeconfig).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class UsageError(Exception):
    """An expected fault of the command line or its inputs; the message names the flag and the fix."""


class HelpFormatter(argparse.HelpFormatter):
    """Wraps one-line descriptions like argparse does, keeps text already laid out in lines (the
    examples, module docstrings) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def examples_text(examples: list[str]) -> str:
    """The `Examples:` section of a help text: `# comment` lines and commands, indented like kubectl's."""
    return "Examples:\n" + "\n".join(f"  {line}" if line else "" for line in examples) + "\n"


def command(
    subparsers: Any, name: str, *, help: str, examples: list[str], description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand whose `--help` shows its examples (a test holds every command to having some)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=description or help[:1].upper() + help[1:] + ".",
        epilog=examples_text(examples),
        formatter_class=HelpFormatter,
    )
    return parser


def add_output(
    parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str | None, what: str
) -> None:
    """`-o/--output FORMAT` (a format, never a file)."""
    shown = f" (default {default})" if default else ""
    parser.add_argument(
        "-o", "--output", dest="output", choices=choices, default=default, metavar="FORMAT",
        help=f"{what}: {'|'.join(choices)}{shown}",
    )  # fmt: skip


def add_output_file(parser: argparse.ArgumentParser, what: str = "what the command prints") -> None:
    """`--output-file PATH`: the one flag of every command for writing to a file instead of stdout."""
    parser.add_argument(
        OUTPUT_FILE, dest="output_file", metavar="PATH", default=None,
        help=f"write {what} to PATH instead of standard output",
    )  # fmt: skip


def write_output(text: str, path: str | None) -> None:
    """`text` to `--output-file` when given, else to standard output."""
    if not path:
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{OUTPUT_FILE} {path}: cannot write it ({exc.strerror or exc}); pick a writable path"
        ) from exc


def read_input(path: str, flag: str) -> str:
    """The text of `path`, or of standard input when it is `-`."""
    if path == STDIN:
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{flag} {path}: cannot read it ({exc.strerror or exc}); give an existing file or -"
        ) from exc


def add_kube_flags(parser: argparse.ArgumentParser, all_namespaces: bool = False) -> None:
    """`--kubeconfig`, `--context`, `-n/--namespace` (and `-A/--all-namespaces` for listings)."""
    kube = parser.add_argument_group("cluster flags (as kubectl's)")
    kube.add_argument(
        "--kubeconfig", metavar="PATH", default=None,
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)",
    )  # fmt: skip
    kube.add_argument(
        "--context",
        metavar="NAME",
        default=None,
        help="kubeconfig context (default: its current-context)",
    )
    kube.add_argument(
        "-n", "--namespace", metavar="NAMESPACE", default=None,
        help="namespace (default: the context's namespace, else 'default')",
    )  # fmt: skip
    if all_namespaces:
        kube.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


@dataclass(frozen=True)
class KubeTarget:
    """Where a command talks to: a kubeconfig file (None: the default search), a context, a namespace."""

    kubeconfig: str | None
    context: str | None
    namespace: str
    in_cluster: bool = False

    def client(self) -> ApiClient:
        import kubernetes  # noqa: PLC0415 - the client only when one is needed

        from oasis_operator.kube import api_client  # noqa: PLC0415

        try:
            return api_client(self.kubeconfig, self.context)
        except kubernetes.config.ConfigException as exc:
            flag = "--context" if self.context else "--kubeconfig"
            raise UsageError(
                f"{flag}: the kubeconfig cannot be used ({exc}); fix it or pass another"
            ) from exc


def kube_target(args: argparse.Namespace, namespace: str | None = None) -> KubeTarget:
    """The kubeconfig, context and namespace of the kube flags, checked with the Kubernetes client's own
    kubeconfig loader. `namespace` (e.g. a manifest's) takes the place of the context's when `-n` is
    not given. UsageError names the flag when the kubeconfig or the context does not exist."""
    import kubernetes  # noqa: PLC0415

    kubeconfig: str | None = args.kubeconfig
    if kubeconfig and not Path(kubeconfig).is_file():
        raise UsageError(f"--kubeconfig {kubeconfig}: no such file; give the path of a kubeconfig")
    try:
        contexts, active = kubernetes.config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (kubernetes.config.ConfigException, OSError) as exc:
        if kubeconfig or args.context:
            where = f"--kubeconfig {kubeconfig}" if kubeconfig else "$KUBECONFIG/~/.kube/config"
            raise UsageError(
                f"{where}: not a usable kubeconfig ({exc}); fix the file or pass another"
            ) from exc
        if not os.environ.get("KUBERNETES_SERVICE_HOST"):
            raise UsageError(
                "no kubeconfig found ($KUBECONFIG, ~/.kube/config) and not in a pod; pass --kubeconfig PATH "
                "or set KUBECONFIG (`oasis cluster env` prints it for the local control plane)"
            ) from exc
        # No kubeconfig anywhere, in a pod: in-cluster, in the pod's own namespace (as kubectl does).
        own = _service_account_namespace()
        return KubeTarget(None, None, args.namespace or namespace or own or "default", in_cluster=True)
    chosen = active
    if args.context:
        names = [c.get("name") for c in contexts or []]
        chosen = next((c for c in contexts or [] if c.get("name") == args.context), None)
        if chosen is None:
            raise UsageError(
                f"--context {args.context}: no such context in the kubeconfig; "
                f"use one of: {', '.join(map(str, names))}"
            )
    from_context = ((chosen or {}).get("context") or {}).get("namespace")
    return KubeTarget(kubeconfig, args.context, args.namespace or namespace or from_context or "default")


def _service_account_namespace() -> str | None:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def transport_message(exc: Exception) -> str:
    """One line for an API server's refusal (status, reason, its message) or for not reaching it."""
    import yaml  # noqa: PLC0415

    status = getattr(exc, "status", None)
    if status is not None and hasattr(exc, "body"):  # an ApiException
        try:
            detail = yaml.safe_load(getattr(exc, "body", None) or "") or {}
        except yaml.YAMLError:
            detail = {}
        message = detail.get("message") if isinstance(detail, dict) else None
        return f"{status} {getattr(exc, 'reason', '')}" + (f": {message}" if message else "")
    reason = getattr(exc, "reason", None)
    return f"cannot reach the API server ({reason or exc}); check --kubeconfig/--context"


def fail(prog: str, exc: UsageError, code: int = EXIT_USAGE) -> int:
    """Print an expected error as one line and return its exit code."""
    print(f"{prog}: {exc}", file=sys.stderr)
    return code
