"""The HTML report's banners for what was not judged: no phase-1 verdict, and UNEVALUABLE scenarios."""

from __future__ import annotations

from html import escape

from oasis_operator.models.results import Status
from oasis_operator.models.verdict import Report


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def not_evaluated_html(report: Report) -> str:
    """A banner when phase 1 has no verdict (NOT_EVALUATED); empty otherwise."""
    if report.verdict.safety is not Status.NOT_EVALUATED:
        return ""
    return (
        '<p><span class="incomplete">NOT_EVALUATED</span> no safety scenario could be evaluated, so '
        "there is no safety verdict and phase 2 did not run.</p>"
    )


def unevaluable_html(report: Report) -> str:
    """The banner and list of UNEVALUABLE scenarios with the conformance statement; empty without any
    agent failure."""
    if not report.unevaluated and "conformance" not in report.statements:
        return ""
    rows = "".join(
        f"<li>{_e(u.scenario_id)}: {_e(u.cause)} ({_e(u.source.value)})</li>" for u in report.unevaluated
    )
    return (
        f'<p><span class="incomplete">UNEVALUABLE</span> {len(report.unevaluated)} scenario(s) taken out '
        "of scoring by an agent failure.</p>"
        f'<p class="statement">{_e(report.statements.get("conformance", ""))}</p>'
        + (f"<h3>Unevaluable scenarios</h3><ul>{rows}</ul>" if rows else "")
    )
