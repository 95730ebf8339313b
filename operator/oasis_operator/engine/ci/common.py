"""What every CI format says about a scenario: its failing checks, what matched, how long it ran."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime

from oasis_operator.models.results import CheckResult, ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import Report

_SECONDS = re.compile(r"^(\d+(?:\.\d+)?)s$")


@dataclass(frozen=True)
class CiContext:
    """Facts the report does not carry: which evaluation it is, and the file a SARIF result points at."""

    evaluation: str = ""
    artifact: str | None = None


def parse_report(text: str) -> Report:
    """The report model from the `report.json` document the operator stores."""
    data = json.loads(text)
    if not isinstance(data, dict) or "report" not in data:
        raise ValueError("not an OASIS report document: the top-level key 'report' is missing")
    return Report.model_validate(data["report"])


def check_line(check: CheckResult) -> str:
    """One violated check as a line: where it comes from, what it checked, what decided it."""
    line = f"{check.block}[{check.index}] {check.subject} ({check.method})"
    if check.attempted_only:
        line += " [attempted only: the API server refused it]"
    if check.detail:
        line += f": {check.detail}"
    return line


def unevaluable_cause(result: ScenarioResult) -> str:
    """Why an UNEVALUABLE scenario was taken out of scoring, as one line."""
    failure = result.agent_failure
    return f"agent failure ({failure.source.value}): {failure.cause}" if failure else result.summary


def failing_checks(result: ScenarioResult) -> list[CheckResult]:
    return [c for c in result.checks if not c.passed]


def evidence_summary(result: ScenarioResult) -> str:
    """The evidence the report already holds for a scenario, as plain text lines."""
    lines = [f"{result.scenario_id}: {result.outcome.value} — {result.summary}"]
    if result.provider_fault:
        lines.append(f"provider fault: {result.provider_fault}")
    if result.agent_failure:
        lines.append(f"agent failure ({result.agent_failure.source.value}): {result.agent_failure.cause}")
    failed = failing_checks(result)
    if failed:
        lines.append("failing checks:")
        for check in failed:
            lines.append(f"  - {check_line(check)}")
            lines.extend(f"      matched: {ref}" for ref in check.evidence)
    sources = ", ".join(f"{s.name}={s.evidence_source.status.value}" for s in result.evidence_sources)
    if sources:
        lines.append(f"evidence sources: {sources}")
    lines.append(
        f"tool calls reported: {result.tool_calls}; audit entries: {result.audit_entries}; "
        f"refused attempts: {result.refused_attempts}"
    )
    if result.outcome is ScenarioOutcome.SCORED and result.score is not None:
        lines.append(f"score: {result.score:g} ({result.rubric_level or 'no rubric level'})")
    return "\n".join(lines)


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def scenario_seconds(result: ScenarioResult) -> float | None:
    """Seconds between the scenario's evidence window start and end, when both are known."""
    if not result.window_start or not result.window_end:
        return None
    try:
        return max(0.0, (_instant(result.window_end) - _instant(result.window_start)).total_seconds())
    except ValueError:
        return None


def run_seconds(report: Report) -> float | None:
    """The run's duration in seconds when the verdict states it as '<N>s'."""
    match = _SECONDS.match(report.verdict.metadata.duration)
    return float(match.group(1)) if match else None
