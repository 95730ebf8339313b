"""The verdict banner, first on the HTML report: the safety verdict, the tier, and whether the run is
complete (coverage against the tier's minimum), each a tile whose word says what its colour does; under
it, what a reader must know before any chart: no safety verdict (NOT_EVALUATED), scenarios whose evidence
could not be read (PROVIDER_FAILURE, a fault of the environment, not of the agent), scenarios an agent
failure took out of scoring (UNEVALUABLE), and models that changed during the run."""

from __future__ import annotations

from html import escape

from oasis_operator.engine.charts import COLOURS
from oasis_operator.engine.render_failures import not_evaluated_html, unevaluable_html
from oasis_operator.models.results import ScenarioOutcome, Status
from oasis_operator.models.verdict import Report

CSS = """
.banner{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}
.tile{flex:1 1 16rem;border-radius:.5rem;padding:.8rem 1rem;color:#fff}
.tile .k{font-size:.85rem;text-transform:uppercase;letter-spacing:.05em;opacity:.9}
.tile .v{font-size:2rem;font-weight:700;margin:.1rem 0 .3rem}
.tile ul{margin:0;padding-left:1.1rem;font-size:.95rem}
.notes p{margin:.4rem 0}.incomplete.provider{background:#a05a00}
"""
NEUTRAL = "#37474f"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _tile(key: str, value: str, colour: str, lines: list[str], part: str) -> str:
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return (
        f'<div class="tile" data-tile="{part}" data-value="{_e(value)}" style="background:{colour}">'
        f'<div class="k">{_e(key)}</div><div class="v">{_e(value)}</div><ul>{items}</ul></div>'
    )


def _safety_tile(report: Report) -> str:
    verdict = report.verdict
    d = verdict.safety_details
    lines = [f"{d.passed} of {d.applicable} applicable scenario(s) passed, {d.failed} failed"]
    if d.provider_failure:
        lines.append(f"{d.provider_failure} PROVIDER_FAILURE (evidence not readable)")
    if d.unevaluable:
        lines.append(f"{d.unevaluable} UNEVALUABLE (agent failure)")
    if d.not_applicable:
        lines.append(f"{d.not_applicable} NOT_APPLICABLE (excluded by the agent's configuration)")
    if d.tolerance_adjusted:
        lines.append(f"{d.tolerance_adjusted} passed under a tolerance: human review")
    value = verdict.safety.value
    return _tile("Safety verdict", value, COLOURS.get(value, NEUTRAL), lines, "safety")


def _tier_tile(report: Report) -> str:
    block = report.verdict.capability
    tier = block.tier if block is not None else report.environment_description.get("tier")
    if block is None:
        lines = ["capability: not evaluated (phase 2 runs only after a safety PASS)"]
    else:
        scored = sum(1 for c in report.capability_categories if c.score is not None)
        lines = [f"capability scored in {scored} of {len(report.capability_categories)} categories"]
        lines += [f"{d.dimension}: {d.score:.3f}" for d in report.core_dimensions if d.score is not None]
    lines.append(report.statements.get("tier", ""))
    return _tile("Tier", f"tier {tier}", COLOURS["SCORED"], [line for line in lines if line], "tier")


def _completeness_tile(report: Report) -> str:
    rows = report.coverage_matrix
    met = sum(1 for r in rows if r.met)
    tier = report.environment_description.get("tier")
    lines = [f"coverage: {met} of {len(rows)} categories meet the tier {tier} minimum"]
    unmet = [r.category for r in rows if not r.met]
    if unmet:
        shown = ", ".join(unmet[:4]) + (f" and {len(unmet) - 4} more" if len(unmet) > 4 else "")
        lines.append(f"below the minimum: {shown}")
    meta = report.verdict.metadata
    if meta.aborted:
        lines.append("run aborted" + (f": {meta.abort_reason}" if meta.abort_reason else ""))
    if meta.agent_failures.count:
        lines.append(f"{meta.agent_failures.count} agent failure(s): no conformance claim")
    value = "INCOMPLETE" if report.incomplete else "COMPLETE"
    colour = COLOURS["FAIL"] if report.incomplete else COLOURS["PASS"]
    return _tile("Completeness", value, colour, lines, "completeness")


def _provider_failures(report: Report) -> str:
    failed = [r for r in report.scenarios if r.outcome is ScenarioOutcome.PROVIDER_FAILURE]
    aborted = report.verdict.metadata.aborted
    if not failed and not (aborted and report.verdict.safety is Status.PROVIDER_FAILURE):
        return ""
    listed = "; ".join(f"{r.scenario_id} ({r.provider_fault or r.summary})" for r in failed[:5])
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    return (
        '<p><span class="incomplete provider">PROVIDER_FAILURE</span> '
        f"{len(failed)} scenario(s) could not be verified because an evidence source failed: a fault of the "
        "environment, not a judgement of the agent"
        + (", and the run aborted" if aborted else "")
        + (f". {_e(listed)}{more}" if listed else "")
        + ".</p>"
    )


def banner_html(report: Report) -> str:
    """The verdict banner and the notes under it."""
    tiles = _safety_tile(report) + _tier_tile(report) + _completeness_tile(report)
    notes = [not_evaluated_html(report), _provider_failures(report)]
    if "agent_models" in report.statements:
        warning = _e(report.statements["agent_models"])
        notes.append(f'<p><span class="incomplete">HETEROGENEOUS MODELS</span> {warning}</p>')
    notes.append(unevaluable_html(report))
    return (
        f'<section class="banner" data-part="verdict" aria-label="verdict">{tiles}</section>'
        f'<div class="notes">{"".join(notes)}</div>'
    )
