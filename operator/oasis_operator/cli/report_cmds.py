"""`oasis report get EVAL`: fetch an evaluation's verdict, report or evidence from its ConfigMaps."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.engine.ci import CI_FORMATS, CiContext, parse_report, render_ci
from oasis_operator.evaluation.run_state import set_name
from oasis_operator.evaluation.store import DocumentError, DocumentStore
from oasis_operator.kube import api_client, request
from oasis_operator.models.crd import MAX_REPETITIONS

FILES = {
    ("report", "html"): "report.html",
    ("report", "yaml"): "report.yaml",
    ("report", "json"): "report.json",
    ("verdict", "yaml"): "verdict.yaml",
    ("verdict", "json"): "verdict.json",
}


def cmd_get(args: argparse.Namespace) -> int:
    api = api_client(args.kubeconfig)
    path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{args.namespace}/oasisevaluations/{args.name}"
    try:
        evaluation = request(api, "GET", path)
    except ApiException as exc:
        print(
            f"oasis: OASISEvaluation {args.namespace}/{args.name}: {exc.status} {exc.reason}", file=sys.stderr
        )
        return 1
    try:
        return _get(args, DocumentStore(api), evaluation)
    except DocumentError as exc:
        print(f"oasis: {args.namespace}/{args.name}: a stored document is damaged: {exc}", file=sys.stderr)
        return 1


def _get(args: argparse.Namespace, store: DocumentStore, evaluation: dict[str, Any]) -> int:
    uid = evaluation["metadata"]["uid"]
    if args.bundles:
        return _write_bundles(store, evaluation, Path(args.bundles))
    document = "verdict" if args.verdict else "report"
    ci = args.output_format in CI_FORMATS
    if (ci and args.verdict) or (document, "json" if ci else args.output_format) not in FILES:
        print(f"oasis: the verdict is available as yaml or json, not {args.output_format}", file=sys.stderr)
        return 2
    files = store.read(args.namespace, uid, document)
    name = FILES[(document, "json" if ci else args.output_format)]
    if name not in files:
        phase = (evaluation.get("status") or {}).get("phase") or "Pending"
        print(
            f"oasis: {args.namespace}/{args.name} has no {document} yet (phase {phase}); it is written when "
            "the evaluation completes or aborts",
            file=sys.stderr,
        )
        return 1
    if ci:
        context = CiContext(f"{args.namespace}/{args.name}", args.sarif_artifact)
        try:
            sys.stdout.write(ci_text(files[name], args.output_format, context))
        except ValueError as exc:
            print(f"oasis: {args.namespace}/{args.name}: {exc}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(files[name])
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


def register(report_sub: Any) -> None:
    get = report_sub.add_parser("get", help="fetch an evaluation's report, verdict or evidence bundles")
    get.add_argument("name", metavar="EVALUATION")
    get.add_argument("-n", "--namespace", default="default")
    get.add_argument(
        "-o", "--output", dest="output_format", choices=("html", "yaml", "json", *CI_FORMATS), default="yaml",
        help="junit, sarif and markdown are the report in CI formats",
    )  # fmt: skip
    get.add_argument(
        "--sarif-artifact", metavar="PATH", default=None,
        help="with -o sarif: the repository file each result points at (code scanning wants one)",
    )  # fmt: skip
    get.add_argument("--verdict", action="store_true", help="the verdict document instead of the report")
    get.add_argument("--bundles", metavar="DIR", help="write every scenario's evidence bundle into DIR")
    get.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, ~/.kube/config, in-cluster")
    get.set_defaults(func=cmd_get)
