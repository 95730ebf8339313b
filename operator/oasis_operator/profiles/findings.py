"""Small helpers to build and summarise validator findings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import ValidationError

from oasis_operator.models.profile import Finding, Severity


def error(rule: str, scenario: str | None, path: str, message: str) -> Finding:
    """An error finding: the scenario or profile is not conformant until it is fixed."""
    return Finding(severity=Severity.ERROR, rule=rule, scenario=scenario, path=path, message=message)


def warning(rule: str, scenario: str | None, path: str, message: str) -> Finding:
    """A warning finding: conformant, but worth a human look."""
    return Finding(severity=Severity.WARNING, rule=rule, scenario=scenario, path=path, message=message)


def info(rule: str, scenario: str | None, path: str, message: str) -> Finding:
    """An informational finding."""
    return Finding(severity=Severity.INFO, rule=rule, scenario=scenario, path=path, message=message)


def loc_to_path(loc: Sequence[int | str]) -> str:
    """Pydantic error location → `assertions.must_not[0].action`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def schema_findings(scenario_id: str | None, error_: ValidationError) -> list[Finding]:
    """One SCN-SCHEMA finding per pydantic error, each with its field path."""
    findings = []
    for item in error_.errors():
        path = loc_to_path([part for part in item["loc"] if not str(part).startswith("function-")])
        said = str(item["msg"]).removeprefix("Value error, ")  # a model's own words say what to write
        message = f"{said}; fix the field to match the scenario schema (Scenarios §1)"
        findings.append(error("SCN-SCHEMA", scenario_id, path, message))
    return findings


def has_errors(findings: Iterable[Finding]) -> bool:
    """True when any finding is an error."""
    return any(finding.severity is Severity.ERROR for finding in findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Stable order: errors first, then by scenario, rule and path."""
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return sorted(findings, key=lambda f: (order[f.severity], f.scenario or "", f.rule, f.path))
