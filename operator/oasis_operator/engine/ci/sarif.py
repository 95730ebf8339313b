"""SARIF 2.1.0: one result per FAIL scenario, with that scenario as the rule it broke.

Code-scanning services (GitHub's among them) want every result to point at a file, so when the caller
names the evaluation file (``CiContext.artifact``) each result points at its first line; the scenario
itself is a logical location either way. PROVIDER_FAILURE is not a finding about the agent: it is a tool
execution notification of the run's invocation, level error. UNEVALUABLE (an agent failure took the
scenario out of scoring) is not a finding either: a notification of level error with the cause, so the
run still shows that it could not judge everything. A FAIL that carries an agent failure keeps it in the
result's properties.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from oasis_operator.engine.ci.common import CiContext, check_line, failing_checks, unevaluable_cause
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import Report

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL = "oasis-operator"


def _utc(value: str) -> str | None:
    """The timestamp if it is an ISO 8601 instant (SARIF requires date-time), else None."""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def _rule(result: ScenarioResult) -> dict[str, Any]:
    tags = ["oasis", result.classification, result.category]
    properties: dict[str, Any] = {
        "category": result.category,
        "classification": result.classification,
        "archetype": result.archetype,
        "tier": result.tier,
        "tags": tags,
    }
    if result.subcategory:
        properties["subcategory"] = result.subcategory
    return {
        "id": result.scenario_id,
        "name": result.name,
        "shortDescription": {"text": result.name},
        "fullDescription": {"text": result.description or result.name},
        "help": {"text": f"{result.description} (OASIS {result.classification} category {result.category})"},
        "defaultConfiguration": {"level": "error"},
        "properties": properties,
    }


def _message(result: ScenarioResult) -> str:
    failed = failing_checks(result)
    text = f"{result.scenario_id} FAIL: {result.summary}."
    if failed:
        text += " Failing checks: " + "; ".join(check_line(c) for c in failed) + "."
    return text


def _result(result: ScenarioResult, index: int, context: CiContext) -> dict[str, Any]:
    logical = {
        "name": result.scenario_id,
        "fullyQualifiedName": f"{context.evaluation}/{result.scenario_id}"
        if context.evaluation
        else result.scenario_id,
        "kind": "scenario",
    }
    location: dict[str, Any] = {"logicalLocations": [logical]}
    if context.artifact:
        location["physicalLocation"] = {
            "artifactLocation": {"uri": context.artifact},
            "region": {"startLine": 1},
        }
    failed = failing_checks(result)
    properties: dict[str, Any] = {
        "category": result.category,
        "failingChecks": [check_line(c) for c in failed],
        "evidence": sorted({ref for c in failed for ref in c.evidence}),
    }
    if result.agent_failure:
        properties["agentFailure"] = result.agent_failure.model_dump(mode="json")
    return {
        "ruleId": result.scenario_id,
        "ruleIndex": index,
        "kind": "fail",
        "level": "error",
        "message": {"text": _message(result)},
        "locations": [location],
        "partialFingerprints": {"oasisScenario/v1": result.scenario_id},
        "properties": properties,
    }


def _invocation(report: Report, context: CiContext) -> dict[str, Any]:
    meta = report.verdict.metadata
    faults = [
        {
            "level": "error",
            "message": {"text": f"{r.scenario_id} PROVIDER_FAILURE: {r.provider_fault or r.summary}"},
            "descriptor": {"id": "OASIS-PROVIDER-FAILURE"},
        }
        for r in report.scenarios
        if r.outcome is ScenarioOutcome.PROVIDER_FAILURE
    ]
    unevaluable = [
        {
            "level": "error",
            "message": {"text": f"{r.scenario_id} UNEVALUABLE: {unevaluable_cause(r)}"},
            "descriptor": {"id": "OASIS-UNEVALUABLE"},
            "properties": {"scenario": r.scenario_id},
        }
        for r in sorted(report.scenarios, key=lambda r: r.scenario_id)
        if r.outcome is ScenarioOutcome.UNEVALUABLE
    ]
    properties: dict[str, Any] = {
        "safety": report.verdict.safety.value,
        "agent": f"{meta.agent} {meta.agent_version}",
        "profile": f"{meta.domain_profile} {meta.domain_profile_version}",
        "tier": meta.environment.tier,
        "aborted": meta.aborted,
        "incomplete": report.incomplete,
        "agentFailures": meta.agent_failures.count,
        "agentModels": {
            "declared": meta.agent_models.declared,
            "observed": [u.model for u in meta.agent_models.observed],
            "heterogeneous": meta.agent_models.heterogeneous,
        },
    }
    if context.evaluation:
        properties["evaluation"] = context.evaluation
    if meta.abort_reason:
        properties["abortReason"] = meta.abort_reason
    invocation: dict[str, Any] = {
        "executionSuccessful": not meta.aborted and not faults,
        "toolExecutionNotifications": faults + unevaluable,
        "properties": properties,
    }
    started = _utc(meta.timestamp)
    if started:
        invocation["startTimeUtc"] = started
    if meta.aborted and meta.abort_reason:
        invocation["exitCodeDescription"] = meta.abort_reason
    return invocation


def sarif_document(report: Report, context: CiContext) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict."""
    failed = [r for r in report.scenarios if r.outcome is ScenarioOutcome.FAIL]
    failed.sort(key=lambda r: r.scenario_id)
    meta = report.verdict.metadata
    version = report.implementation.get("version", "")
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": TOOL,
                "version": version,
                "semanticVersion": version,
                "rules": [_rule(r) for r in failed],
            }
        },
        "automationDetails": {"id": f"oasis/{meta.agent}/{context.evaluation or 'run'}"},
        "invocations": [_invocation(report, context)],
        "results": [_result(r, i, context) for i, r in enumerate(failed)],
        "columnKind": "unicodeCodePoints",
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(report: Report, context: CiContext) -> str:
    """The SARIF log as JSON text with a trailing newline."""
    return json.dumps(sarif_document(report, context), indent=2, ensure_ascii=False) + "\n"
