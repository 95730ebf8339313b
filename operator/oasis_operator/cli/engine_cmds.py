"""`oasis replay` and `oasis report render`: evaluate recorded evidence and render verdicts/reports."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from oasis_operator.cli import report_cmds, report_list
from oasis_operator.cli.common import (
    UsageError,
    add_output,
    add_output_file,
    command,
    read_input,
    write_output,
)
from oasis_operator.engine.render import render_html, render_json, render_yaml
from oasis_operator.engine.replay import (
    bundle_paths,
    load_bundle,
    replay_results,
    results_json,
    run_info_from_bundles,
)
from oasis_operator.engine.report import build_report
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.verdict import RunInfo
from oasis_operator.profiles import load_profile
from oasis_operator.profiles.loader import shipped_profile_path


def _run_info(path: str | None) -> RunInfo | None:
    if path is None:
        return None
    try:
        data: Any = yaml.safe_load(read_input(path, "--run"))
        return RunInfo.model_validate(data)
    except (yaml.YAMLError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise UsageError(
            f"--run {path}: not a RunInfo document ({exc}); see `oasis report render --help`"
        ) from exc


def cmd_replay(args: argparse.Namespace) -> int:
    """Re-evaluate bundles and print the scenario results as JSON (byte-identical across runs)."""
    profile = load_profile(args.profile or shipped_profile_path())
    bundles = [load_bundle(p) for p in bundle_paths(args.bundles)]
    if not bundles:
        print("no bundles found", file=sys.stderr)
        return 2
    try:
        results = replay_results(bundles, profile)
    except ValueError as exc:  # the runs of a repeated scenario do not fit together
        print(f"oasis replay: {exc}", file=sys.stderr)
        return 2
    text = results_json(results)
    if args.output == "yaml":
        text = yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True)
    write_output(text, args.output_file)
    return 0


def _load_inputs(paths: list[str]) -> tuple[list[EvidenceBundle], list[ScenarioResult]]:
    """Bundles and previously computed results (`oasis replay` output: a JSON list) from the paths."""
    bundles: list[EvidenceBundle] = []
    results: list[ScenarioResult] = []
    for path in bundle_paths(paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, list):
            results.extend(ScenarioResult.model_validate(item) for item in data)
        else:
            bundles.append(EvidenceBundle.model_validate(data))
    return bundles, results


def cmd_render(args: argparse.Namespace) -> int:
    """Evaluate bundles (and/or read saved results) and render the verdict or the full report."""
    profile = load_profile(args.profile or shipped_profile_path())
    bundles, saved = _load_inputs(args.bundles)
    if not bundles and not saved:
        print("no bundles or results found", file=sys.stderr)
        return 2
    run = _run_info(args.run)
    if run is None and not bundles:
        print("--run is required when only saved results are given", file=sys.stderr)
        return 2
    try:
        results = replay_results(bundles, profile) + saved
    except ValueError as exc:  # the runs of a repeated scenario do not fit together
        print(f"oasis report render: {exc}", file=sys.stderr)
        return 2
    report = build_report(results, profile, run or run_info_from_bundles(bundles, args.tier))
    item = report.verdict if args.verdict_only else report
    if args.output == "html":
        if args.verdict_only:
            print("--verdict-only renders YAML or JSON", file=sys.stderr)
            return 2
        text = render_html(report)
    elif args.output == "json":
        text = render_json(item)
    else:
        text = render_yaml(item)
    write_output(text, args.output_file)
    return 0


REPLAY_EXAMPLES = [
    "# re-evaluate the bundles `oasis report get --bundles` wrote; the same results every time",
    "oasis replay evidence/ --output-file results.json",
    "# against another profile, as YAML",
    "oasis replay evidence/*.json --profile my-profile/ -o yaml",
]
RENDER_EXAMPLES = [
    "# the HTML report of recorded bundles",
    "oasis report render evidence/ -o html --output-file report.html",
    "# the verdict only, from saved `oasis replay` results and the run's facts",
    "oasis report render results.json --run run.yaml --verdict-only -o json",
]


def register(subparsers: Any) -> None:
    """Add `replay` and `report render`."""
    replay = command(
        subparsers, "replay", help="re-evaluate recorded evidence bundles", examples=REPLAY_EXAMPLES
    )
    replay.add_argument("bundles", nargs="+", metavar="BUNDLE", help="bundle JSON files or directories")
    replay.add_argument("--profile", help="profile directory (default: the shipped SI profile)")
    add_output(replay, ("json", "yaml"), "json", "the scenario results (`report render` reads the JSON)")
    add_output_file(replay, "the results")
    replay.set_defaults(func=cmd_replay)

    report = command(
        subparsers,
        "report",
        help="verdicts and reports: from the cluster (get) or from recorded bundles (render)",
        examples=[*report_cmds.EXAMPLES[:2], *RENDER_EXAMPLES[:2]],
    )
    report_sub = report.add_subparsers(dest="report_command", metavar="ACTION")
    render = command(
        report_sub,
        "render",
        help="render the verdict/report for recorded bundles",
        examples=RENDER_EXAMPLES,
    )
    render.add_argument(
        "bundles",
        nargs="+",
        metavar="INPUT",
        help="bundle JSON files, `oasis replay` outputs, or directories",
    )
    render.add_argument("--profile", help="profile directory (default: the shipped SI profile)")
    render.add_argument(
        "--run",
        metavar="FILE",
        help="YAML/JSON file with run facts (RunInfo), - for standard input; derived from bundles if absent",
    )
    render.add_argument(
        "--tier", type=int, default=1, choices=(1, 2, 3), help="claimed tier when --run is absent"
    )
    add_output(render, ("yaml", "json", "html"), "yaml", "the report or verdict")
    render.add_argument("--verdict-only", action="store_true", help="only the Reporting §1 verdict document")
    add_output_file(render, "the report")
    render.set_defaults(func=cmd_render)
    report_cmds.register(report_sub)
    report_list.register(report_sub)
