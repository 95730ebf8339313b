"""JUnit XML: one test case per scenario, one suite per phase, capability scores as suite properties.

The layout is the Ant/Surefire one that Jenkins, GitLab, GitHub test reporters and most CI systems read:
FAIL is a ``<failure>``, PROVIDER_FAILURE an ``<error>`` (the provider could not decide, the agent did not
fail), UNEVALUABLE an ``<error>`` with the agent failure's cause (nothing could be judged), NOT_APPLICABLE
a ``<skipped>`` with the reason, a scored capability scenario a passing case whose score is in its output
and in the suite's properties.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from oasis_operator.engine.ci.common import (
    CiContext,
    evidence_summary,
    run_seconds,
    scenario_seconds,
    unevaluable_cause,
)
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import Report

# Characters XML 1.0 cannot carry, even escaped; agent-controlled text may contain them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
PHASES = ("safety", "capability")
ERROR_OUTCOMES = (ScenarioOutcome.PROVIDER_FAILURE, ScenarioOutcome.UNEVALUABLE)


def _x(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _time(seconds: float | None) -> str:
    return f"{seconds or 0.0:.3f}"


def _property(parent: ET.Element, name: str, value: object) -> None:
    ET.SubElement(parent, "property", {"name": _x(name), "value": _x(value)})


def _case(parent: ET.Element, result: ScenarioResult) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        {
            "name": _x(result.scenario_id),
            "classname": _x(f"oasis.{result.classification}.{result.category}"),
            "time": _time(scenario_seconds(result)),
        },
    )
    summary = evidence_summary(result)
    if result.outcome is ScenarioOutcome.FAIL:
        failure = ET.SubElement(case, "failure", {"type": "FAIL", "message": _x(result.summary)})
        failure.text = _x(summary)
    elif result.outcome is ScenarioOutcome.PROVIDER_FAILURE:
        cause = result.provider_fault or result.summary
        error = ET.SubElement(case, "error", {"type": "PROVIDER_FAILURE", "message": _x(cause)})
        error.text = _x(summary)
    elif result.outcome is ScenarioOutcome.UNEVALUABLE:
        error = ET.SubElement(
            case, "error", {"type": "UNEVALUABLE", "message": _x(unevaluable_cause(result))}
        )
        error.text = _x(summary)
    elif result.outcome is ScenarioOutcome.NOT_APPLICABLE:
        reason = "; ".join(result.exclusion_reasons) or result.summary
        skipped = ET.SubElement(case, "skipped", {"type": "NOT_APPLICABLE", "message": _x(reason)})
        skipped.text = _x(f"NOT_APPLICABLE (excluded, not passed): {reason}")
    out = ET.SubElement(case, "system-out")
    out.text = _x(f"{result.name}: {result.description}\n{summary}")


def _verdict_properties(properties: ET.Element, report: Report, context: CiContext) -> None:
    meta = report.verdict.metadata
    if context.evaluation:
        _property(properties, "oasis.evaluation", context.evaluation)
    _property(properties, "oasis.safety", report.verdict.safety.value)
    _property(properties, "oasis.agent", f"{meta.agent} {meta.agent_version}")
    if meta.agent_models.declared:
        _property(properties, "oasis.agent.model", meta.agent_models.declared)
    _property(properties, "oasis.agent.models.heterogeneous", str(meta.agent_models.heterogeneous).lower())
    _property(properties, "oasis.profile", f"{meta.domain_profile} {meta.domain_profile_version}")
    _property(properties, "oasis.tier", meta.environment.tier)
    _property(properties, "oasis.incomplete", str(report.incomplete).lower())
    _property(properties, "oasis.aborted", str(meta.aborted).lower())
    _property(properties, "oasis.agent_failures", meta.agent_failures.count)
    if meta.abort_reason:
        _property(properties, "oasis.abort_reason", meta.abort_reason)


def _capability_properties(properties: ET.Element, report: Report) -> None:
    capability = report.verdict.capability
    if capability is None:
        return
    _property(properties, "oasis.capability.tier", capability.tier)
    coverage = capability.coverage
    _property(
        properties,
        "oasis.capability.coverage",
        f"{coverage.evaluated_archetypes}/{coverage.required_archetypes} archetypes"
        + ("" if coverage.complete else " (incomplete)"),
    )
    for dimension, score in sorted(capability.core_dimensions.items()):
        _property(properties, f"oasis.dimension.{dimension}", f"{score:g}")
    for category, detail in sorted(capability.domain_categories.items()):
        _property(properties, f"oasis.category.{category}", f"{detail.score:g}")


def _suite(
    root: ET.Element, phase: str, results: list[ScenarioResult], report: Report, context: CiContext
) -> ET.Element:
    def count(outcome: ScenarioOutcome) -> int:
        return sum(1 for r in results if r.outcome is outcome)

    seconds = sum(scenario_seconds(r) or 0.0 for r in results)
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _x(f"oasis.{phase}"),
            "tests": str(len(results)),
            "failures": str(count(ScenarioOutcome.FAIL)),
            "errors": str(count(ScenarioOutcome.PROVIDER_FAILURE) + count(ScenarioOutcome.UNEVALUABLE)),
            "skipped": str(count(ScenarioOutcome.NOT_APPLICABLE)),
            "time": _time(seconds),
            "timestamp": _x(report.verdict.metadata.timestamp),
        },
    )
    properties = ET.SubElement(suite, "properties")
    _verdict_properties(properties, report, context)
    if phase == "capability":
        _capability_properties(properties, report)
    for result in sorted(results, key=lambda r: (r.category, r.scenario_id)):
        _case(suite, result)
    return suite


def render_junit(report: Report, context: CiContext) -> str:
    """The report as one JUnit XML document (UTF-8 text with an XML declaration)."""
    phases = [p for p in PHASES if any(r.classification == p for r in report.scenarios)]
    phases += sorted({r.classification for r in report.scenarios} - set(PHASES))
    total = run_seconds(report)
    if total is None:
        total = sum(scenario_seconds(r) or 0.0 for r in report.scenarios)
    root = ET.Element(
        "testsuites",
        {
            "name": _x(report.title),
            "tests": str(len(report.scenarios)),
            "failures": str(sum(1 for r in report.scenarios if r.outcome is ScenarioOutcome.FAIL)),
            "errors": str(sum(1 for r in report.scenarios if r.outcome in ERROR_OUTCOMES)),
            "time": _time(total),
        },
    )
    for phase in phases:
        _suite(root, phase, [r for r in report.scenarios if r.classification == phase], report, context)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
