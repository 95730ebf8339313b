"""Per-scenario rows, counts and the verdict summary of an evaluation's status (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.verdict import Verdict

MESSAGE_LIMIT = 300


def _short(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def initial_row(scenario: Scenario) -> dict[str, Any]:
    return {"id": scenario.id, "classification": scenario.classification.value, "category": scenario.category}


def excluded_row(scenario: Scenario, reasons: list[str]) -> dict[str, Any]:
    return {
        **initial_row(scenario),
        "result": ScenarioOutcome.NOT_APPLICABLE.value,
        "reason": "; ".join(reasons),
    }


def finished_row(
    row: dict[str, Any], result: ScenarioResult, evidence: str | None, agent_error: str | None
) -> dict[str, Any]:
    """The row once the engine has judged the scenario."""
    done = {**row, "result": result.outcome.value}
    if result.score is not None:
        done["score"] = round(result.score, 4)
    failed = [c.subject for c in result.failed_checks][:2]
    message = result.provider_fault or result.summary or ("; ".join(failed) if failed else "")
    if message:
        done["message"] = _short(message)
    if evidence:
        done["evidence"] = evidence
    if agent_error:
        done["agentError"] = _short(agent_error, 200)
    return done


def unevaluable_row(row: dict[str, Any], cause: str, evidence: str | None) -> dict[str, Any]:
    """The row of a scenario whose agent never acted: no result, the cause, and the evidence kept."""
    done = {**row, "unevaluable": _short(cause), "message": "unevaluable: counted in no score"}
    done.pop("result", None)
    if evidence:
        done["evidence"] = evidence
    return done


def is_done(row: dict[str, Any]) -> bool:
    return row.get("result") is not None or bool(row.get("unevaluable"))


def judged(rows: list[dict[str, Any]]) -> bool:
    """Whether any scenario of the run has a result the engine decided (exclusions do not count)."""
    return any(r.get("result") not in (None, ScenarioOutcome.NOT_APPLICABLE.value) for r in rows)


def unevaluated(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(scenario id, cause) of every unevaluable scenario, in row order."""
    return [(r["id"], r["unevaluable"]) for r in rows if r.get("unevaluable")]


def progress(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Counts for status.progress."""
    results = [r.get("result") for r in rows]
    unevaluable = sum(1 for r in rows if r.get("unevaluable"))
    return {
        "done": sum(1 for r in results if r is not None) + unevaluable,
        "total": len(rows),
        "passed": results.count(ScenarioOutcome.PASS.value),
        "failed": results.count(ScenarioOutcome.FAIL.value),
        "providerFailure": results.count(ScenarioOutcome.PROVIDER_FAILURE.value),
        "notApplicable": results.count(ScenarioOutcome.NOT_APPLICABLE.value),
        "scored": results.count(ScenarioOutcome.SCORED.value),
        "unevaluable": unevaluable,
    }


def summary(
    verdict: Verdict, results: list[ScenarioResult], unevaluable: list[str] | None = None
) -> dict[str, Any]:
    """status.summary from the verdict document; unevaluable scenarios make the run incomplete."""
    out: dict[str, Any] = {
        "safety": verdict.safety.value,
        "tier": verdict.metadata.environment.tier,
        "aborted": verdict.metadata.aborted,
        "failedScenarios": sorted(r.scenario_id for r in results if r.outcome is ScenarioOutcome.FAIL),
        "incomplete": bool(unevaluable),
    }
    if unevaluable:
        out["unevaluableScenarios"] = sorted(unevaluable)
    if verdict.metadata.abort_reason:
        out["abortReason"] = _short(verdict.metadata.abort_reason)
    if verdict.capability is not None:
        out["tier"] = verdict.capability.tier
        out["coreDimensions"] = {
            k: round(v, 4) for k, v in sorted(verdict.capability.core_dimensions.items())
        }
        out["incomplete"] = bool(unevaluable) or not verdict.capability.coverage.complete
    return out


def skipped(rows: list[dict[str, Any]], classification: str, message: str) -> list[dict[str, Any]]:
    """Rows of a classification that will not run get a message saying why (their result stays empty)."""
    return [
        {**r, "message": message} if r["classification"] == classification and not is_done(r) else r
        for r in rows
    ]
