"""`oasis evaluate -f FILE --wait`: apply an evaluation, follow it to its end, exit with the verdict.

Exit codes (what a CI job gates on):
  0  safety verdict PASS
  1  safety verdict FAIL (also when the run aborted after a FAIL: FAIL beats PROVIDER_FAILURE)
  2  safety verdict PROVIDER_FAILURE, or the run aborted without a FAIL
  3  no verdict: bad file, the evaluation already exists, API errors, phase Failed, timeout
  4  safety verdict NOT_EVALUATED: the run finished but no safety scenario could be evaluated (every
     one UNEVALUABLE after an agent failure, or NOT_APPLICABLE); phase 2 did not run
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import urllib3
import yaml
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.cli.common import (
    STDIN,
    UsageError,
    add_kube_flags,
    add_output,
    add_output_file,
    command,
    kube_target,
    read_input,
    write_output,
)
from oasis_operator.cli.report_cmds import REPORT_FORMATS, report_text
from oasis_operator.cli.verdict_codes import (
    EXIT_ERROR,
    EXIT_PASS,
    verdict_exit_code,
)
from oasis_operator.engine.ci import CiContext, parse_report
from oasis_operator.evaluation.store import DocumentError, DocumentStore
from oasis_operator.kube import request
from oasis_operator.models.crd import OASISEvaluationSpec

TERMINAL = ("Completed", "Aborted", "Failed")
PLURAL = "oasisevaluations"
OUTPUT_FORMATS = ("name", *REPORT_FORMATS)


class EvaluateError(Exception):
    """Anything that ends the command before a verdict (exit 3); the message says what to fix."""


def load_manifest(path: Path | str, namespace: str | None) -> tuple[dict[str, Any], str | None]:
    """The one OASISEvaluation in `path` (`-`: standard input), checked, and the namespace it names
    (`-n`, else its metadata.namespace; None: the kubeconfig context's decides)."""
    source = "standard input" if str(path) == STDIN else str(path)
    try:
        text = read_input(str(path), "-f")
    except UsageError as exc:
        raise EvaluateError(f"cannot read {source}: {exc}") from exc
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise EvaluateError(f"{source} is not valid YAML: {exc}") from exc
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise EvaluateError(
            f"{source} must hold exactly one OASISEvaluation object, found {len(documents)} documents"
        )
    body: dict[str, Any] = documents[0]
    expected = f"{API_GROUP}/{API_VERSION}"
    if body.get("apiVersion") != expected or body.get("kind") != "OASISEvaluation":
        raise EvaluateError(
            f"{source}: apiVersion/kind are {body.get('apiVersion')!r}/{body.get('kind')!r}; "
            f"set them to {expected!r}/'OASISEvaluation'"
        )
    metadata = body.get("metadata")
    if not isinstance(metadata, dict) or not (metadata.get("name") or metadata.get("generateName")):
        raise EvaluateError(f"{source}: set metadata.name (or metadata.generateName for a new name per run)")
    try:
        OASISEvaluationSpec.model_validate(body.get("spec") or {})
    except ValidationError as exc:
        problems = "; ".join(
            "spec." + ".".join(str(p) for p in e["loc"]) + f": {e['msg']}" for e in exc.errors()[:5]
        )
        raise EvaluateError(f"{source}: {problems}") from exc
    declared = metadata.get("namespace")
    if namespace and declared and namespace != declared:
        raise EvaluateError(
            f"{source}: metadata.namespace is {declared!r} but -n says {namespace!r}; drop one"
        )
    return body, namespace or declared or None


def _collection(namespace: str) -> str:
    return f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/{PLURAL}"


def _api_message(exc: ApiException) -> str:
    try:
        detail = yaml.safe_load(exc.body or "") or {}
    except yaml.YAMLError:
        detail = {}
    message = detail.get("message") if isinstance(detail, dict) else None
    return f"{exc.status} {exc.reason}" + (f": {message}" if message else "")


def _transport_message(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        return _api_message(exc)
    reason = getattr(exc, "reason", None)
    return f"cannot reach the API server: {reason or exc}"


def _wait_gone(api: ApiClient, path: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            request(api, "GET", path)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        time.sleep(1.0)
    raise EvaluateError(
        f"{path.rsplit('/', 1)[-1]} was not deleted in time (its sandboxes are torn down first)"
    )


def apply_evaluation(
    api: ApiClient, body: dict[str, Any], namespace: str, replace: bool, deadline: float
) -> dict[str, Any]:
    """Create the evaluation; with `replace`, delete an existing one of the same name first."""
    body = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
    try:
        created: dict[str, Any] = request(api, "POST", _collection(namespace), body)
    except ApiException as exc:
        name = body["metadata"].get("name")
        if exc.status != 409 or not name:
            raise EvaluateError(f"creating the evaluation in {namespace}: {_api_message(exc)}") from exc
        if not replace:
            raise EvaluateError(
                f"OASISEvaluation {namespace}/{name} already exists and its spec is frozen once it has "
                "started; pass --replace to delete it and run again, or use metadata.generateName"
            ) from exc
        path = f"{_collection(namespace)}/{name}"
        print(f"oasis: deleting the existing {namespace}/{name} (--replace)", file=sys.stderr)
        request(api, "DELETE", path)
        _wait_gone(api, path, deadline)
        created = request(api, "POST", _collection(namespace), body)
    return created


def progress_line(name: str, status: dict[str, Any]) -> str:
    """One line of progress: phase, scenarios done/total and the counts so far."""
    phase = status.get("phase") or "Pending"
    progress = status.get("progress") or {}
    line = f"oasis: {name} phase={phase} done={progress.get('done', 0)}/{progress.get('total', 0)}"
    counts = [
        f"{label}={progress[key]}"
        for key, label in (("passed", "pass"), ("failed", "fail"), ("providerFailure", "provider_failure"),
                           ("notApplicable", "not_applicable"), ("scored", "scored"),
                           ("unevaluable", "unevaluable"))
        if progress.get(key)
    ]  # fmt: skip
    return line + (" " + " ".join(counts) if counts else "")


def follow(api: ApiClient, path: str, name: str, deadline: float, interval: float) -> dict[str, Any]:
    """Poll the evaluation until a terminal phase; print a line whenever the progress changes."""
    last, failures = "", 0
    while True:
        try:
            current: dict[str, Any] = request(api, "GET", path)
            failures = 0
        except (ApiException, urllib3.exceptions.HTTPError) as exc:
            if isinstance(exc, ApiException) and exc.status == 404:
                raise EvaluateError(f"{name} was deleted while it ran") from exc
            failures += 1
            if failures >= 5:
                raise EvaluateError(f"reading {name}: {_transport_message(exc)} (5 times in a row)") from exc
            current = {}
        status = current.get("status") or {}
        if current:
            line = progress_line(name, status)
            if line != last:
                print(line, file=sys.stderr, flush=True)
                last = line
            if status.get("phase") in TERMINAL:
                return current
        if time.monotonic() >= deadline:
            raise EvaluateError(
                f"{name} reached no terminal phase in time ({last or 'no status yet'}); it keeps running"
            )
        time.sleep(interval)


def _failed_message(status: dict[str, Any]) -> str:
    ready: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    gaps = status.get("preflightGaps") or []
    text = f"phase Failed, reason {ready.get('reason', 'unknown')}: {ready.get('message', 'no message')}"
    return text + ("; preflight gaps: " + "; ".join(gaps) if gaps else "")


def _report_files(api: ApiClient, evaluation: dict[str, Any], wait: float = 30.0) -> dict[str, str]:
    """The stored report document's files (report.json, .yaml, .html) of a finished evaluation."""
    meta = evaluation["metadata"]
    store, deadline = DocumentStore(api), time.monotonic() + wait
    while True:
        try:
            files = store.read(meta["namespace"], meta["uid"], "report")
        except DocumentError as exc:
            raise EvaluateError(f"{meta['name']}: its stored report is damaged: {exc}") from exc
        if "report.json" in files:
            return files
        if time.monotonic() >= deadline:
            raise EvaluateError(f"{meta['name']} finished but its report ConfigMap was not found")
        time.sleep(1.0)


def _check_flags(args: argparse.Namespace) -> None:
    if args.output in REPORT_FORMATS and not args.wait:
        raise EvaluateError(f"-o {args.output} writes the report of a finished run: add --wait")
    if args.output_file and args.output in (None, "name"):
        raise EvaluateError(
            f"--output-file writes the report: choose its format with -o ({'|'.join(REPORT_FORMATS)})"
        )


def run(args: argparse.Namespace) -> int:
    _check_flags(args)
    body, declared = load_manifest(args.filename, args.namespace)
    try:
        target = kube_target(args, declared)
    except UsageError as exc:
        raise EvaluateError(str(exc)) from exc
    namespace = target.namespace
    deadline = time.monotonic() + args.timeout
    try:
        api = target.client()
    except Exception as exc:  # the kubernetes config loader raises several unrelated types
        raise EvaluateError(f"no usable kubeconfig: {exc}; pass --kubeconfig/--context") from exc
    try:
        created = apply_evaluation(api, body, namespace, args.replace, deadline)
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        raise EvaluateError(f"applying the evaluation in {namespace}: {_transport_message(exc)}") from exc
    name = f"{namespace}/{created['metadata']['name']}"
    print(f"oasis: created OASISEvaluation {name}", file=sys.stderr)
    if args.output == "name":
        print(f"oasisevaluation.{API_GROUP}/{created['metadata']['name']}", flush=True)
    if not args.wait:
        return EXIT_PASS
    path = f"{_collection(namespace)}/{created['metadata']['name']}"
    final = follow(api, path, name, deadline, args.interval)
    status = final.get("status") or {}
    if status.get("phase") == "Failed":
        raise EvaluateError(f"{name}: {_failed_message(status)}")
    files = _report_files(api, final)
    if args.output in REPORT_FORMATS:
        context = CiContext(name, _artifact(args.filename))
        try:
            write_output(report_text(files, args.output, context), args.output_file)
        except (ValueError, UsageError) as exc:
            raise EvaluateError(f"{name}: {exc}") from exc
        if args.output_file:
            print(f"oasis: wrote {args.output} to {args.output_file}", file=sys.stderr)
    try:  # the stored verdict decides, not the status summary (a digest of it)
        verdict = parse_report(files["report.json"]).verdict
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise EvaluateError(f"{name}: the stored report does not parse: {exc}") from exc
    safety = verdict.safety.value
    code = verdict_exit_code(safety, verdict.metadata.aborted)
    print(f"oasis: {name} {status.get('phase')}: safety {safety} (exit {code})", file=sys.stderr)
    return code


def _artifact(filename: str) -> str:
    """The evaluation file as a repository-relative POSIX path (what SARIF locations want)."""
    if filename == STDIN:
        return "evaluation.yaml"
    path = Path(filename)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def cmd_evaluate(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except EvaluateError as exc:
        print(f"oasis: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        where = args.namespace or "the evaluation's namespace"
        print(f"oasis: {where}: {_transport_message(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("oasis: interrupted; the evaluation keeps running in the cluster", file=sys.stderr)
        return 130


EXAMPLES = [
    "# run the evaluation in a CI job: exit code from the verdict, JUnit for the CI system",
    "oasis evaluate -f evaluation.yaml --wait -o junit --output-file oasis-junit.xml",
    "# apply without waiting and print the created name (with metadata.generateName)",
    "oasis evaluate -f evaluation.yaml -o name",
    "# from standard input, in another context and namespace, replacing an earlier run",
    "cat evaluation.yaml | oasis evaluate -f - --context staging -n team-a --replace --wait",
]


def register(subparsers: Any) -> None:
    ev = command(
        subparsers,
        "evaluate",
        help="apply an OASISEvaluation and follow it to its verdict (exit 0 PASS, 1 FAIL, 2 "
        "PROVIDER_FAILURE/aborted, 3 no verdict, 4 NOT_EVALUATED)",
        description=__doc__,
        examples=EXAMPLES,
    )
    ev.add_argument(
        "-f",
        "--filename",
        required=True,
        metavar="FILE",
        help="YAML/JSON file with one OASISEvaluation; - reads standard input",
    )
    ev.add_argument("--wait", action="store_true", help="follow the run to a terminal phase")
    ev.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait in all (default 3600)")
    ev.add_argument("--replace", action="store_true", help="delete an existing evaluation of the same name")
    add_output(ev, OUTPUT_FORMATS, None, "name: the created resource; a report format (needs --wait)")
    add_output_file(ev, "the report of -o")
    ev.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    add_kube_flags(ev)
    ev.set_defaults(func=cmd_evaluate)
    parser: Any = ev  # argparse's error() is a method; this command's exits 3
    parser.error = _usage_error(ev)


def _usage_error(parser: argparse.ArgumentParser) -> Callable[[str], NoReturn]:
    """Usage errors exit 3 like every other error before a verdict (argparse's 2 would read as one)."""

    def error(message: str) -> NoReturn:
        parser.print_usage(sys.stderr)
        print(f"oasis evaluate: {message}", file=sys.stderr)
        sys.exit(EXIT_ERROR)

    return error
