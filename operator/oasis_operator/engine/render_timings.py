"""The report's timings section in HTML: where each scenario's time went, and the median of each phase."""

from __future__ import annotations

import statistics
from html import escape

from oasis_operator.models.timings import PHASES, PhaseTimings
from oasis_operator.models.verdict import Report


def phase_medians(timings: dict[str, PhaseTimings]) -> dict[str, float]:
    """The median of each phase over the scenarios that measured it, in phase order."""
    out = {}
    for phase in PHASES:
        values = [v for t in timings.values() if (v := getattr(t, phase)) is not None]
        if values:
            out[phase] = statistics.median(values)
    return out


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def timings_html(report: Report) -> str:
    """A table of phase wall times per scenario (seconds), medians first; empty without timings."""
    if not report.timings:
        return ""
    medians = phase_medians(report.timings)
    head = "".join(f"<th>{escape(p)}</th>" for p in ("scenario", *PHASES, "evaluator"))
    rows = ["<tr><td><strong>median</strong></td>" + "".join(
        f"<td>{_cell(medians.get(p))}</td>" for p in PHASES) + "<td></td></tr>"]  # fmt: skip
    for scenario_id, t in sorted(report.timings.items()):
        cells = "".join(f"<td>{_cell(getattr(t, p))}</td>" for p in PHASES)
        rows.append(f"<tr><td>{escape(scenario_id)}</td>{cells}<td>{_cell(t.evaluator_seconds())}</td></tr>")
    return (
        "<h2>Phase timings</h2><p>Wall seconds per phase; <em>evaluator</em> is every phase but the "
        "agent's. Teardown runs in the background, off the scenario's critical path.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
