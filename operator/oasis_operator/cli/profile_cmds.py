"""`oasis validate`, `oasis scenarios export` and `oasis profile quality`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.models.profile import Finding, Profile, Severity
from oasis_operator.profiles.export import export_manifests, scenario_from_manifest
from oasis_operator.profiles.findings import has_errors, sort_findings
from oasis_operator.profiles.loader import (
    ProfileLoadError,
    ScenarioDocument,
    detect_layout,
    load_profile,
    load_profile_metadata,
    load_scenario_documents,
    read_yaml_documents,
    shipped_profile_path,
)
from oasis_operator.profiles.profile_rules import profile_findings
from oasis_operator.profiles.quality import quality_report
from oasis_operator.profiles.validator import validate_documents

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def _is_profile_dir(path: Path) -> bool:
    try:
        detect_layout(path)
    except ProfileLoadError:
        return False
    return True


def _scenario_documents(path: Path) -> list[ScenarioDocument]:
    """Scenario documents from a YAML file holding scenarios or Scenario custom resources."""
    documents = []
    for document in read_yaml_documents(path):
        body = document.document
        if body.get("kind") == "Scenario" and "spec" in body:
            documents.append(ScenarioDocument(source=document.source, document=scenario_from_manifest(body)))
        elif body.get("kind") == "List" and isinstance(body.get("items"), list):
            documents.extend(
                ScenarioDocument(
                    source=f"{document.source}/items[{i}]", document=scenario_from_manifest(item)
                )
                for i, item in enumerate(body["items"])
                if isinstance(item, dict)
            )
        else:
            documents.append(document)
    return documents


def validate_path(path: Path, profile_dir: Path | None) -> list[Finding]:
    """Findings for a profile directory, or for a scenario/manifest file checked against a profile."""
    if path.is_dir() and _is_profile_dir(path):
        metadata = load_profile_metadata(path)
        documents = load_scenario_documents(path)
        findings = validate_documents(documents, metadata)
        parsed = _parse_all(documents)
        return sort_findings(
            [*profile_findings(metadata.model_copy(update={"scenarios": parsed})), *findings]
        )
    profile = load_profile(profile_dir or shipped_profile_path())
    if path.is_dir():
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
        documents = [doc for file in files for doc in _scenario_documents(file)]
    elif path.is_file():
        documents = _scenario_documents(path)
    else:
        raise ProfileLoadError(f"{path}: no such file or directory")
    return validate_documents(documents, profile)


def _parse_all(documents: list[ScenarioDocument]) -> list[Any]:
    from pydantic import ValidationError  # noqa: PLC0415

    from oasis_operator.models.scenario import Scenario  # noqa: PLC0415 - keeps the import local to this helper

    parsed = []
    for document in documents:
        try:
            parsed.append(Scenario.model_validate(document.document))
        except ValidationError:
            continue
    return parsed


def _print_findings(findings: list[Finding], output_format: str) -> None:
    if output_format == "json":
        print(json.dumps([finding.model_dump(mode="json") for finding in findings], indent=2))
        return
    for finding in findings:
        where = " ".join(part for part in (finding.scenario or "<profile>", finding.path) if part)
        print(f"{finding.severity.value:7} {finding.rule:28} {where}: {finding.message}")
    counts = {severity: sum(1 for f in findings if f.severity is severity) for severity in Severity}
    summary = ", ".join(f"{n} {severity.value}{'s' if n != 1 else ''}" for severity, n in counts.items())
    print(summary)


def cmd_validate(args: argparse.Namespace) -> int:
    """Print findings for PATH; exit 1 when any finding is an error, 2 when PATH cannot be read."""
    try:
        findings = validate_path(Path(args.path), Path(args.profile) if args.profile else None)
    except ProfileLoadError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    _print_findings(findings, args.format)
    return EXIT_FINDINGS if has_errors(findings) else EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """Write Scenario custom resources for every scenario of PROFILE as multi-document YAML."""
    try:
        profile: Profile = load_profile(args.profile_dir)
    except ProfileLoadError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    manifests = export_manifests(profile, namespace=args.namespace)
    text = yaml.safe_dump_all(manifests, sort_keys=False, allow_unicode=True, width=120)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_quality(args: argparse.Namespace) -> int:
    """Print the profile quality report as YAML or JSON."""
    try:
        profile = load_profile(args.profile_dir)
    except ProfileLoadError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    report = quality_report(profile).model_dump(mode="json")
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        sys.stdout.write(yaml.safe_dump(report, sort_keys=False))
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add `validate`, `scenarios export` and `profile quality` to the `oasis` command."""
    validate = subparsers.add_parser(
        "validate", help="validate a profile directory, scenario file or manifests"
    )
    validate.add_argument("path", help="profile directory, scenario YAML file, or Scenario manifests")
    validate.add_argument(
        "--profile", help="profile directory to validate files against (default: shipped SI)"
    )
    validate.add_argument("--format", choices=["text", "json"], default="text")
    validate.set_defaults(func=cmd_validate)

    scenarios = subparsers.add_parser("scenarios", help="work with scenarios of a profile")
    scenario_commands = scenarios.add_subparsers(dest="scenarios_command", metavar="COMMAND")
    export = scenario_commands.add_parser(
        "export", help="emit Scenario custom resources (kubectl apply -f -)"
    )
    export.add_argument("profile_dir", metavar="PROFILE", help="profile directory")
    export.add_argument("--namespace", "-n", help="set metadata.namespace on every resource")
    export.add_argument("--output", "-o", help="write to this file instead of stdout")
    export.set_defaults(func=cmd_export)

    profile = subparsers.add_parser("profile", help="inspect a profile")
    profile_commands = profile.add_subparsers(dest="profile_command", metavar="COMMAND")
    quality = profile_commands.add_parser("quality", help="profile quality report (Profiles §3)")
    quality.add_argument("profile_dir", metavar="PROFILE", help="profile directory")
    quality.add_argument("--format", choices=["yaml", "json"], default="yaml")
    quality.set_defaults(func=cmd_quality)
