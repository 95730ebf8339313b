"""`oasis matrix`: a fleet of evaluations (agents x models x repetitions) from one file.

  oasis matrix render -f FILE    the OASISEvaluations as YAML, for a GitOps repository or `kubectl apply -f -`
  oasis matrix apply -f FILE     create them (all or none); --wait follows them to one summary
  oasis matrix status NAME       the summary of a matrix's evaluations (also -f FILE); --wait follows them

With `--wait`, the exit code is the most severe of the evaluations' (as `oasis evaluate --wait` exits):
1 any safety FAIL, else 2 any PROVIDER_FAILURE or aborted run, else 3 any without a verdict (phase Failed,
missing, still running at the timeout), else 4 any NOT_EVALUATED, else 0. The file's format is in
docs/matrix.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, NoReturn

import urllib3
import yaml
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.cli.common import (
    UsageError,
    add_kube_flags,
    add_output,
    add_output_file,
    command,
    kube_target,
    read_input,
    transport_message,
    write_output,
)
from oasis_operator.cli.matrix import (
    TERMINAL,
    MatrixError,
    Row,
    build_evaluations,
    expected_names,
    load_matrix,
    overall_code,
    render_text,
    row,
    table_text,
    tally,
)
from oasis_operator.cli.verdict_codes import EXIT_ERROR, EXIT_PASS
from oasis_operator.kube import request
from oasis_operator.models.matrix import MATRIX_LABEL, EvaluationMatrix

PLURAL = "oasisevaluations"
STATUS_FORMATS = ("json", "yaml")  # without -o: the table

EXAMPLES = [
    "# what a GitOps repository commits: the evaluations of the matrix as YAML",
    "oasis matrix render -f nightly.yaml > evaluations/nightly.yaml",
    "# a nightly suite in CI: create every evaluation, follow them all, exit with the worst verdict",
    "oasis matrix apply -f nightly.yaml --replace --wait --timeout 14400",
    "# the summary of a matrix already applied (kubectl apply of rendered YAML, or another job's)",
    "oasis matrix status nightly -n team-a -o json",
]


def _collection(namespace: str) -> str:
    return f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/{PLURAL}"


def _load(args: argparse.Namespace) -> EvaluationMatrix:
    source = "standard input" if args.filename == "-" else args.filename
    return load_matrix(read_input(args.filename, "-f"), source)


def cmd_render(args: argparse.Namespace) -> int:
    matrix = _load(args)
    write_output(render_text(build_evaluations(matrix, args.namespace), args.output), args.output_file)
    return 0


def _wait_gone(api: ApiClient, paths: list[str], deadline: float) -> None:
    pending = list(paths)
    while pending:
        for path in list(pending):
            try:
                request(api, "GET", path)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                pending.remove(path)
        if not pending:
            return
        if time.monotonic() >= deadline:
            names = ", ".join(p.rsplit("/", 1)[-1] for p in pending)
            raise MatrixError(f"not deleted in time (their sandboxes are torn down first): {names}")
        time.sleep(1.0)


def apply_all(api: ApiClient, bodies: list[dict[str, Any]], namespace: str, replace: bool,
              deadline: float) -> None:  # fmt: skip
    """Create every evaluation, or none: existing ones are refused before anything is created (with
    `replace`: deleted first, and waited for)."""
    paths = [f"{_collection(namespace)}/{b['metadata']['name']}" for b in bodies]
    existing = []
    for path in paths:
        try:
            request(api, "GET", path)
            existing.append(path)
        except ApiException as exc:
            if exc.status != 404:
                raise
    if existing and not replace:
        names = ", ".join(p.rsplit("/", 1)[-1] for p in existing)
        raise MatrixError(
            f"{len(existing)} of the matrix's evaluations already exist in {namespace} ({names}) and their "
            "specs are frozen once started; pass --replace to delete them and run again. Nothing was created"
        )
    for path in existing:
        print(
            f"oasis: deleting the existing {namespace}/{path.rsplit('/', 1)[-1]} (--replace)", file=sys.stderr
        )
        request(api, "DELETE", path)
    _wait_gone(api, existing, deadline)
    for body in bodies:
        placed = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
        request(api, "POST", _collection(namespace), placed)
        print(f"oasis: created OASISEvaluation {namespace}/{placed['metadata']['name']}", file=sys.stderr)


def current_rows(api: ApiClient, namespace: str, matrix: str, names: list[str] | None) -> list[Row]:
    """The matrix's evaluations as summary rows: `names` (from the file) when known, else every one the
    matrix label finds (and a Missing row for each the size annotation says is gone)."""
    found = request(api, "GET", _collection(namespace), query={"labelSelector": f"{MATRIX_LABEL}={matrix}"})
    items = {i["metadata"]["name"]: i for i in found.get("items") or []}
    wanted = names if names is not None else expected_names(list(items.values()), matrix)
    return [row(name, items.get(name)) for name in wanted]


def follow(api: ApiClient, namespace: str, matrix: str, names: list[str] | None, wait: bool,
           deadline: float, interval: float) -> list[Row]:  # fmt: skip
    """The rows now, or with `wait` once every evaluation has ended (or at the deadline); a line on
    standard error whenever the tally changes."""
    last = ""
    while True:
        rows = current_rows(api, namespace, matrix, names)
        line = f"oasis: matrix {namespace}/{matrix}: {tally(rows)}"
        if wait and line != last:
            print(line, file=sys.stderr, flush=True)
            last = line
        ended = all(r.phase in TERMINAL or r.phase == "Missing" for r in rows)
        if not wait or ended or time.monotonic() >= deadline:
            return rows
        time.sleep(interval)


def _summary(rows: list[Row], args: argparse.Namespace, namespace: str, matrix: str) -> int:
    if args.output == "json":
        text = json.dumps({"matrix": matrix, "namespace": namespace, "exitCode": overall_code(rows),
                           "evaluations": [r.as_dict() for r in rows]}, indent=2) + "\n"  # fmt: skip
    elif args.output == "yaml":
        text = yaml.safe_dump({"matrix": matrix, "namespace": namespace, "exitCode": overall_code(rows),
                               "evaluations": [r.as_dict() for r in rows]}, sort_keys=False)  # fmt: skip
    else:
        text = table_text(rows)
    write_output(text, args.output_file)
    if not args.wait:
        return EXIT_PASS
    code = overall_code(rows)
    running = [r.name for r in rows if r.code is None]
    if running:
        print(f"oasis: matrix {namespace}/{matrix}: not ended in time: {', '.join(running)}", file=sys.stderr)
    print(f"oasis: matrix {namespace}/{matrix}: {tally(rows)} (exit {code})", file=sys.stderr)
    return code


def cmd_apply(args: argparse.Namespace) -> int:
    matrix = _load(args)
    bodies = build_evaluations(matrix, args.namespace)
    target = kube_target(args, matrix.metadata.namespace)
    api, deadline = target.client(), time.monotonic() + args.timeout
    apply_all(api, bodies, target.namespace, args.replace, deadline)
    if not args.wait:
        return EXIT_PASS
    names = [b["metadata"]["name"] for b in bodies]
    rows = follow(api, target.namespace, matrix.metadata.name, names, True, deadline, args.interval)
    return _summary(rows, args, target.namespace, matrix.metadata.name)


def cmd_status(args: argparse.Namespace) -> int:
    if bool(args.name) == bool(args.filename):
        raise UsageError("name the matrix (NAME) or give its file (-f FILE), one of the two")
    names, declared, name = None, None, args.name
    if args.filename:
        matrix = _load(args)
        names = [b["metadata"]["name"] for b in build_evaluations(matrix, args.namespace)]
        declared, name = matrix.metadata.namespace, matrix.metadata.name
    target = kube_target(args, declared)
    api = target.client()
    rows = follow(
        api, target.namespace, name, names, args.wait, time.monotonic() + args.timeout, args.interval
    )
    if not rows:
        raise MatrixError(
            f"no evaluation of matrix {name!r} in {target.namespace} (label {MATRIX_LABEL}={name})"
        )
    return _summary(rows, args, target.namespace, name)


def _guarded(func: Any) -> Any:
    """Expected faults as one line and exit 3 (no verdict), as `oasis evaluate` does."""

    def run(args: argparse.Namespace) -> int:
        try:
            code: int = func(args)
        except (MatrixError, UsageError) as exc:
            print(f"oasis matrix: {exc}", file=sys.stderr)
            return EXIT_ERROR
        except (ApiException, urllib3.exceptions.HTTPError) as exc:
            print(f"oasis matrix: {transport_message(exc)}", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt:
            print("oasis matrix: interrupted; the evaluations keep running in the cluster", file=sys.stderr)
            return 130
        return code

    return run


def _file_flag(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("-f", "--filename", required=required, metavar="FILE", default=None,
                        help="the EvaluationMatrix file; - reads standard input")  # fmt: skip


def _wait_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait", action="store_true", help="follow every evaluation to its end; exit with the worst"
    )
    parser.add_argument(
        "--timeout", type=float, default=14400.0, help="seconds to wait in all (default 14400)"
    )
    parser.add_argument("--interval", type=float, default=5.0, help=argparse.SUPPRESS)


def _exit_3_on_usage(parser: argparse.ArgumentParser, name: str) -> None:
    """Usage errors exit 3 like every other error before a verdict (argparse's 2 would read as one)."""

    def error(message: str) -> NoReturn:
        parser.print_usage(sys.stderr)
        print(f"oasis matrix {name}: {message}", file=sys.stderr)
        sys.exit(EXIT_ERROR)

    target: Any = parser  # argparse's error() is a method
    target.error = error


def register(subparsers: Any) -> None:
    matrix = command(
        subparsers,
        "matrix",
        help="a fleet of evaluations, agents x models x repetitions, from one file",
        description=__doc__,
        examples=EXAMPLES,
    )
    sub = matrix.add_subparsers(dest="matrix_command", metavar="COMMAND", required=True)
    render = command(sub, "render", help="print the matrix's OASISEvaluations (YAML, or -o json)",
                     examples=EXAMPLES[:2])  # fmt: skip
    _file_flag(render, True)
    add_output(render, ("yaml", "json"), "yaml", "the objects' format")
    add_output_file(render)
    render.add_argument(
        "-n", "--namespace", metavar="NAMESPACE", default=None,
        help="namespace of every evaluation (default: the file's metadata.namespace)",
    )  # fmt: skip
    render.set_defaults(func=_guarded(cmd_render))

    apply = command(sub, "apply", help="create the matrix's OASISEvaluations, all or none",
                    examples=EXAMPLES[2:4])  # fmt: skip
    _file_flag(apply, True)
    apply.add_argument("--replace", action="store_true", help="delete existing evaluations of the same names")
    _wait_flags(apply)
    add_output(apply, STATUS_FORMATS, None, "the summary with --wait: a table by default")
    add_output_file(apply, "the summary")
    add_kube_flags(apply)
    apply.set_defaults(func=_guarded(cmd_apply))

    status = command(sub, "status", help="the summary of a matrix's evaluations", examples=EXAMPLES[4:])
    status.add_argument("name", nargs="?", metavar="NAME", help="the matrix's metadata.name")
    _file_flag(status, False)
    _wait_flags(status)
    add_output(status, STATUS_FORMATS, None, "a table by default")
    add_output_file(status, "the summary")
    add_kube_flags(status)
    status.set_defaults(func=_guarded(cmd_status))
    for name, parser in (("render", render), ("apply", apply), ("status", status)):
        _exit_3_on_usage(parser, name)
