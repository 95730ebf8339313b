"""`oasis report get EVAL`: fetch an evaluation's verdict, report or evidence from its ConfigMaps."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.cli.common import (
    UsageError,
    add_kube_flags,
    add_output,
    add_output_file,
    command,
    kube_target,
    transport_message,
    write_output,
)
from oasis_operator.cli.report_multikueue import add_worker_flags, ran_by_multikueue, worker_documents
from oasis_operator.engine.ci import CI_FORMATS, CiContext, parse_report, render_ci
from oasis_operator.evaluation.run_state import set_name
from oasis_operator.evaluation.store import DocumentError, DocumentStore
from oasis_operator.kube import request
from oasis_operator.models.crd import MAX_REPETITIONS

FILES = {
    ("report", "html"): "report.html",
    ("report", "yaml"): "report.yaml",
    ("report", "json"): "report.json",
    ("verdict", "yaml"): "verdict.yaml",
    ("verdict", "json"): "verdict.json",
}
# What `-o` chooses for a report (`oasis report get`, `oasis evaluate --wait`): the stored documents, or
# the report in a CI format.
REPORT_FORMATS = ("yaml", "json", "html", *CI_FORMATS)


def report_text(files: dict[str, str], fmt: str, context: CiContext) -> str:
    """The stored report document's `files` in format `fmt`; ValueError if the stored report is unusable."""
    name = "report.json" if fmt in CI_FORMATS else FILES[("report", fmt)]
    if name not in files:
        raise ValueError(f"the stored report has no {name} (stored by another operator version?)")
    return ci_text(files[name], fmt, context) if fmt in CI_FORMATS else files[name]


def cmd_get(args: argparse.Namespace) -> int:
    if args.verdict and args.output not in ("yaml", "json"):
        raise UsageError(f"--verdict: the verdict is available as -o yaml or -o json, not -o {args.output}")
    target = kube_target(args)
    api = target.client()
    namespace = target.namespace
    path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/oasisevaluations/{args.name}"
    try:
        evaluation = request(api, "GET", path)
        if ran_by_multikueue(evaluation):  # the documents are in the worker cluster that ran it
            api, evaluation = worker_documents(args, api, evaluation)
        return _get(args, DocumentStore(api), evaluation)
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        print(f"oasis: OASISEvaluation {namespace}/{args.name}: {transport_message(exc)}", file=sys.stderr)
        return 1
    except DocumentError as exc:
        print(f"oasis: {namespace}/{args.name}: a stored document is damaged: {exc}", file=sys.stderr)
        return 1


def _get(args: argparse.Namespace, store: DocumentStore, evaluation: dict[str, Any]) -> int:
    meta = evaluation["metadata"]
    where = f"{meta['namespace']}/{meta['name']}"
    if args.bundles:
        return _write_bundles(store, evaluation, Path(args.bundles))
    document = "verdict" if args.verdict else "report"
    files = store.read(meta["namespace"], meta["uid"], document)
    wanted = "report.json" if args.output in CI_FORMATS else FILES[(document, args.output)]
    if wanted not in files:
        phase = (evaluation.get("status") or {}).get("phase") or "Pending"
        print(
            f"oasis: {where} has no {document} yet (phase {phase}); it is written when "
            "the evaluation completes or aborts",
            file=sys.stderr,
        )
        return 1
    if args.verdict:
        write_output(files[wanted], args.output_file)
        return 0
    try:
        text = report_text(files, args.output, CiContext(where, args.sarif_artifact))
    except ValueError as exc:
        print(f"oasis: {where}: {exc}", file=sys.stderr)
        return 1
    write_output(text, args.output_file)
    return 0


def ci_text(report_json: str, fmt: str, context: CiContext) -> str:
    """The stored report.json in a CI format; ValueError (naming the problem) if it is not a report."""
    try:
        report = parse_report(report_json)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"the stored report does not parse at report.{where}: {first['msg']}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"the stored report is not JSON: {exc}") from exc
    return render_ci(report, fmt, context)


def _write_bundles(store: DocumentStore, evaluation: dict[str, Any], directory: Path) -> int:
    """Every scenario's evidence bundle as <scenario id>.json, one per run as <scenario id>.run-NN.json
    (inputs for `oasis replay`, which combines the runs of a scenario again)."""
    meta = evaluation["metadata"]
    directory.mkdir(parents=True, exist_ok=True)
    rows = (evaluation.get("status") or {}).get("scenarios") or []
    found = bundle_files(rows, store.read_all(meta["namespace"], meta["uid"]))
    for name, text in found.items():
        (directory / name).write_text(text)
    print(f"wrote {len(found)} evidence bundles to {directory}", file=sys.stderr)
    return 0


def bundle_files(rows: list[dict[str, Any]], stored: dict[str, dict[str, str]]) -> dict[str, str]:
    """File name → bundle text for every stored scenario set (and every run's set) of the rows."""
    out: dict[str, str] = {}
    for index, row in enumerate(rows):
        sets = {"": set_name(index)}
        sets.update({f".run-{n:02d}": set_name(index, n) for n in range(1, MAX_REPETITIONS + 1)})
        for suffix, name in sets.items():
            if "bundle.json" in stored.get(name, {}):
                out[f"{row['id']}{suffix}.json"] = stored[name]["bundle.json"]
    return out


EXAMPLES = [
    "# the HTML report of a finished evaluation, into a file",
    "oasis report get my-agent -n team-a -o html --output-file report.html",
    "# the verdict document as JSON, in the kubeconfig context's namespace",
    "oasis report get my-agent --verdict -o json",
    "# the report as SARIF for code scanning, pointing at the evaluation file",
    "oasis report get my-agent -o sarif --sarif-artifact evaluation.yaml --output-file oasis.sarif",
    "# every scenario's evidence bundle (for `oasis replay`)",
    "oasis report get my-agent --bundles evidence/",
    "# an evaluation MultiKueue ran in a worker cluster: its documents are read there",
    "oasis report get my-agent --worker-kubeconfig worker.kubeconfig",
]


def register(report_sub: Any) -> None:
    get = command(
        report_sub, "get", help="fetch an evaluation's report, verdict or evidence bundles from the cluster",
        examples=EXAMPLES,
    )  # fmt: skip
    get.add_argument("name", metavar="EVALUATION", help="the OASISEvaluation's name")
    add_output(get, REPORT_FORMATS, "yaml", "the stored report, or the report in a CI format")
    add_output_file(get)
    get.add_argument(
        "--sarif-artifact", metavar="PATH", default=None,
        help="with -o sarif: the repository file each result points at (code scanning wants one)",
    )  # fmt: skip
    get.add_argument("--verdict", action="store_true", help="the verdict document instead of the report")
    get.add_argument("--bundles", metavar="DIR", help="write every scenario's evidence bundle into DIR")
    add_kube_flags(get)
    add_worker_flags(get)
    get.set_defaults(func=cmd_get)
