"""Charts of the HTML report as inline SVG (pure; no script, no external asset, same report same bytes).
The charts read at a glance at the top of the report are in `engine.glance`; these are the shared parts
(colours, the SVG frame, the legend) and the charts of the sections below.

- `run_spread`: the scenarios run more than once (spec.repetitions): one square per run coloured by its
  outcome, and for capability scenarios the score's range (min to max) with the mean marked.
- `timeline`: one scenario's evidence timeline: the agent's requests, the stimuli and the deciding
  checks, each a dot on the run's time axis with its offset and label.

Every mark carries `data-*` attributes (scenario, outcome, score, kind) so the rendered page can be
checked by what it shows, not by how the markup is spelled.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from oasis_operator.models.results import ScenarioResult, TimelineEvent

COLOURS = {
    "PASS": "#0a7d24",
    "FAIL": "#b00020",
    "PROVIDER_FAILURE": "#d98200",
    "NOT_APPLICABLE": "#9e9e9e",
    "SCORED": "#1565c0",
    "UNEVALUABLE": "#6a1b9a",
    "NOT_EVALUATED": "#455a64",
    "request": "#1565c0",
    "stimulus": "#7b1fa2",
    "state": "#00838f",
}
CSS = """
svg.chart{display:block;margin:.5rem 0;font:12px system-ui,sans-serif}
svg.chart text{fill:#1d1d1f}.legend span{display:inline-block;margin-right:1rem}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
"""
CELL, GAP, LABEL_WIDTH, ROW = 18, 4, 270, 24
BAR_WIDTH = 320


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def svg(width: int, height: int, label: str, body: list[str], chart: str) -> str:
    return (
        f'<svg class="chart" data-chart="{chart}" role="img" aria-label="{_e(label)}" '
        f'width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">' + "".join(body) + "</svg>"
    )


def legend(items: list[str]) -> str:
    """A colour legend for the given outcomes or kinds."""
    spans = "".join(f'<span><i style="background:{COLOURS[i]}"></i>{_e(i)}</span>' for i in items)
    return f'<p class="legend">{spans}</p>'


def run_spread(results: list[ScenarioResult]) -> str:
    """Each repeated scenario's runs, a square per run coloured by outcome, its score's range, and both
    written beside them (so the chart reads without colour)."""
    repeated = [r for r in results if r.repetitions is not None]
    runs = max((len(r.repetitions.runs) for r in repeated if r.repetitions is not None), default=1)
    squares = runs * (CELL + GAP)
    body: list[str] = []
    for y, result in enumerate(repeated):
        reps, top = result.repetitions, y * ROW
        if reps is None:  # filtered above; for the type checker
            continue
        flag = " (flaky)" if reps.flaky else ""
        body.append(f'<text x="0" y="{top + 14}">{_e(result.scenario_id)}{flag}</text>')
        for record in reps.runs:
            left = LABEL_WIDTH + (record.run - 1) * (CELL + GAP)
            score = f" {record.score:.3f}" if record.score is not None else ""
            body.append(
                f'<rect class="run" x="{left}" y="{top + 2}" width="{CELL}" height="{CELL}" rx="3" '
                f'fill="{COLOURS.get(record.outcome, "#616161")}" '
                f'data-scenario="{_e(result.scenario_id)}" data-run="{record.run}" '
                f'data-outcome="{_e(record.outcome)}">'
                f"<title>{_e(result.scenario_id)} run {record.run}: {_e(record.outcome)}{score}</title>"
                "</rect>"
            )
        if reps.score is not None:
            left = LABEL_WIDTH + squares + GAP
            low, high = (round(left + BAR_WIDTH * v, 1) for v in (reps.score.min, reps.score.max))
            mean = round(left + BAR_WIDTH * reps.score.mean, 1)
            body.append(
                f'<rect x="{left}" y="{top + 8}" width="{BAR_WIDTH}" height="6" fill="#eceff1"/>'
                f'<rect class="range" x="{low}" y="{top + 8}" width="{max(high - low, 1)}" height="6" '
                f'fill="{COLOURS["SCORED"]}" data-scenario="{_e(result.scenario_id)}" '
                f'data-min="{reps.score.min:.3f}" data-max="{reps.score.max:.3f}" '
                f'data-std="{reps.score.std:.3f}">'
                f"<title>score {reps.score.min:.3f} to {reps.score.max:.3f}, mean {reps.score.mean:.3f}, "
                f"std {reps.score.std:.3f}</title></rect>"
                f'<rect x="{mean - 1}" y="{top + 4}" width="2" height="14" fill="#1d1d1f"/>'
            )
        tally: dict[str, int] = {}
        for record in reps.runs:
            tally[record.outcome] = tally.get(record.outcome, 0) + 1
        said = ", ".join(f"{n} {outcome}" for outcome, n in tally.items())
        if reps.score is not None:
            said += f"; score {reps.score.min:.3f} to {reps.score.max:.3f}, mean {reps.score.mean:.3f}"
        text_x = LABEL_WIDTH + squares + GAP + BAR_WIDTH + 12
        body.append(f'<text class="runs" x="{text_x}" y="{top + 14}">{_e(said)}</text>')
    width = LABEL_WIDTH + squares + GAP + BAR_WIDTH + 330
    height = max(len(repeated), 1) * ROW + 4
    return svg(width, height, "outcome of every run and score range", body, "spread-chart")


def _seconds(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def timeline(result: ScenarioResult) -> str:
    """One scenario's evidence timeline: a dot per event on the run's time axis, labelled in order."""
    events: list[TimelineEvent] = result.timeline
    if not events:
        return ""
    moments = [_seconds(e.time) for e in events]
    known = [m for m in moments if m is not None]
    start = min(known, default=0.0)
    span = max(max(known, default=0.0) - start, 1e-6)
    lane = 240
    body = [f'<line x1="10" y1="4" x2="10" y2="{len(events) * 18}" stroke="#ccc"/>']
    for y, (event, moment) in enumerate(zip(events, moments, strict=True)):
        top = y * 18 + 12
        colour = COLOURS.get(event.status, COLOURS["PASS"]) if event.kind == "check" else COLOURS[event.kind]
        x = 10 + (lane * (moment - start) / span if moment is not None else lane)
        offset = f"+{moment - start:.2f}s" if moment is not None else "?"
        status = f" → {event.status}" if event.status else ""
        body.append(
            f'<circle class="event" cx="{x:.1f}" cy="{top - 4}" r="4" fill="{colour}" '
            f'data-kind="{event.kind}" data-status="{_e(event.status)}" data-ref="{_e(event.ref)}">'
            f"<title>{_e(event.time)}</title></circle>"
            f'<text x="{lane + 24}" y="{top}">{offset} {_e(event.kind)} {_e(event.label)}{_e(status)}</text>'
        )
    width = 1100
    label = f"evidence timeline of {result.scenario_id}"
    return (
        "<h4>Evidence timeline</h4>"
        + svg(width, len(events) * 18 + 6, label, body, "timeline")
        + legend(
            [
                "request",
                "stimulus",
                *(["state"] if any(e.kind == "state" for e in events) else []),
                "PASS",
                "FAIL",
            ]
        )
    )
