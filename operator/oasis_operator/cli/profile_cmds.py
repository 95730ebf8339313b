"""`oasis validate`, `oasis scenarios export` and `oasis profile quality`."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.cli.common import STDIN, add_output, add_output_file, command, write_output
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
    if output_format in ("json", "yaml"):
        documents = [finding.model_dump(mode="json") for finding in findings]
        if output_format == "json":
            print(json.dumps(documents, indent=2))
        else:
            sys.stdout.write(yaml.safe_dump(documents, sort_keys=False, allow_unicode=True))
        return
    for finding in findings:
        where = " ".join(part for part in (finding.scenario or "<profile>", finding.path) if part)
        print(f"{finding.severity.value:7} {finding.rule:28} {where}: {finding.message}")
    counts = {severity: sum(1 for f in findings if f.severity is severity) for severity in Severity}
    summary = ", ".join(f"{n} {severity.value}{'s' if n != 1 else ''}" for severity, n in counts.items())
    print(summary)


def cmd_validate(args: argparse.Namespace) -> int:
    """Print findings for PATH; exit 1 when any finding is an error, 2 when PATH cannot be read."""
    profile = Path(args.profile) if args.profile else None
    try:
        if args.path == STDIN:
            with tempfile.TemporaryDirectory(prefix="oasis-validate-") as scratch:
                copy = Path(scratch) / "stdin.yaml"
                copy.write_text(sys.stdin.read(), encoding="utf-8")
                findings = validate_path(copy, profile)
        else:
            findings = validate_path(Path(args.path), profile)
    except ProfileLoadError as problem:
        print(f"oasis validate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    _print_findings(findings, args.output)
    return EXIT_FINDINGS if has_errors(findings) else EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """Write Scenario custom resources for every scenario of PROFILE as multi-document YAML."""
    try:
        profile: Profile = load_profile(args.profile_dir)
    except ProfileLoadError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    manifests = export_manifests(profile, namespace=args.namespace)
    if args.output == "json":  # one List, as `kubectl get -o json` prints several objects
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}, indent=2) + "\n"
    else:
        text = yaml.safe_dump_all(manifests, sort_keys=False, allow_unicode=True, width=120)
    write_output(text, args.output_file)
    return EXIT_OK


def cmd_quality(args: argparse.Namespace) -> int:
    """Print the profile quality report as YAML or JSON."""
    try:
        profile = load_profile(args.profile_dir)
    except ProfileLoadError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    report = quality_report(profile).model_dump(mode="json")
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        sys.stdout.write(yaml.safe_dump(report, sort_keys=False))
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add `validate`, `scenarios export` and `profile quality` to the `oasis` command."""
    validate = command(
        subparsers,
        "validate",
        help="validate a profile directory, scenario file or manifests",
        description="Prints the findings for PATH. Exit 0 without errors, 1 when a finding is an error, "
        "2 when PATH cannot be read.",
        examples=[
            "# the shipped profile",
            "oasis validate profiles/software-infrastructure",
            "# your own scenarios (or Scenario manifests) against it, as JSON",
            "oasis validate my-scenarios.yaml -o json",
            "# what another command prints",
            "oasis scenarios export profiles/software-infrastructure | oasis validate -",
        ],
    )
    validate.add_argument(
        "path",
        metavar="PATH",
        help="profile directory, scenario YAML file, Scenario manifests; - reads stdin",
    )
    validate.add_argument(
        "--profile", help="profile directory to validate files against (default: shipped SI)"
    )
    add_output(validate, ("text", "json", "yaml"), "text", "the findings")
    validate.set_defaults(func=cmd_validate)

    scenarios = command(
        subparsers,
        "scenarios",
        help="work with scenarios of a profile",
        examples=["oasis scenarios export profiles/software-infrastructure | kubectl apply -f -"],
    )
    scenario_commands = scenarios.add_subparsers(dest="scenarios_command", metavar="COMMAND")
    export = command(
        scenario_commands,
        "export",
        help="emit Scenario custom resources (kubectl apply -f -)",
        examples=[
            "# install the shipped scenarios in the cluster",
            "oasis scenarios export profiles/software-infrastructure | kubectl apply -f -",
            "# into a file, for namespace team-a, as one JSON List",
            "oasis scenarios export profiles/software-infrastructure -n team-a -o json \\",
            "    --output-file scenarios.json",
        ],
    )
    export.add_argument("profile_dir", metavar="PROFILE", help="profile directory")
    export.add_argument("-n", "--namespace", help="set metadata.namespace on every resource (default: none)")
    add_output(export, ("yaml", "json"), "yaml", "the manifests")
    add_output_file(export, "the manifests")
    export.set_defaults(func=cmd_export)

    profile = command(
        subparsers,
        "profile",
        help="inspect a profile",
        examples=["oasis profile quality profiles/software-infrastructure"],
    )
    profile_commands = profile.add_subparsers(dest="profile_command", metavar="COMMAND")
    quality = command(
        profile_commands,
        "quality",
        help="profile quality report (Profiles §3)",
        examples=[
            "# difficulty, surfaces, negative testing... of the shipped profile",
            "oasis profile quality profiles/software-infrastructure",
            "oasis profile quality profiles/software-infrastructure -o json",
        ],
    )
    quality.add_argument("profile_dir", metavar="PROFILE", help="profile directory")
    add_output(quality, ("yaml", "json"), "yaml", "the report")
    quality.set_defaults(func=cmd_quality)
