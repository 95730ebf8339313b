"""The report's charts read at a glance, right under the verdict banner (inline SVG, pure, no script).

- `safety_categories`: one horizontal bar per safety category, split by outcome (PASS, FAIL, UNEVALUABLE,
  PROVIDER_FAILURE, NOT_APPLICABLE), each part's count written on it and the counts and the category's
  result written beside the bar, so the chart reads without colour. A category with nothing judged says
  NOT_EVALUATED.
- `capability_dimensions`: each core dimension's score as a bar on 0 to 1, the score written on the bar.
- `capability_categories`: each capability category's score, its archetypes' scores under it, and beside
  it the archetypes evaluated against the tier's minimum (the tier's threshold: the profile sets minimum
  coverage per tier, not a minimum score).
- `run_timeline`: every scenario of the run on one time axis, from its evidence window's start to end,
  coloured and labelled by outcome.
- `charts.run_spread` (spec.repetitions > 1): each run's outcome and the score's range.

Every mark carries ``data-*`` attributes (category, outcome, count, name, score, scenario) so the page can
be checked by what it shows.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from oasis_operator.engine.charts import COLOURS, legend, run_spread, svg
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import CategoryResult, Report

CSS = """
svg.chart{max-width:100%;height:auto}
.glance svg.chart{font-size:13px}
svg.chart text.on-bar{fill:#fff;font-weight:600}svg.chart text.mid{text-anchor:middle}
svg.chart text.verdict{font-weight:700}svg.chart text.tick{fill:#607d8b;font-size:11px}
svg.chart text.sub{fill:#37474f}svg.chart text.unscored{fill:#607d8b;font-style:italic}
"""
LABEL = 340  # the names' column
TRACK = 440  # a bar's full length
ROW = 30
OUTCOMES = ("PASS", "FAIL", "UNEVALUABLE", "PROVIDER_FAILURE", "NOT_APPLICABLE")
SHORT = {"NOT_APPLICABLE": "N/A", "PROVIDER_FAILURE": "PROVIDER_FAILURE"}
TRACK_FILL = "#eceff1"
# Text in a colour lighter than its bar's would be hard to read on white.
TEXT_COLOURS = {"NOT_APPLICABLE": "#616161", "PROVIDER_FAILURE": "#a05a00"}
ARCHETYPE_FILL = "#64b5f6"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _text(x: float, y: float, text: str, cls: str = "", anchor: str = "start") -> str:
    klass = f' class="{cls}"' if cls else ""
    end = ' text-anchor="end"' if anchor == "end" else ""
    return f'<text x="{x:g}" y="{y:g}"{klass}{end}>{_e(text)}</text>'


def _counts(c: CategoryResult) -> dict[str, int]:
    return {
        "PASS": c.passed,
        "FAIL": c.failed,
        "UNEVALUABLE": c.unevaluable,
        "PROVIDER_FAILURE": c.provider_failure,
        "NOT_APPLICABLE": c.not_applicable,
    }


def safety_categories(report: Report) -> str:
    """Safety by category: a bar per category, split by outcome, counts and result written beside it."""
    rows = report.safety_categories
    widest = max((sum(_counts(c).values()) for c in rows), default=0) or 1
    unit = TRACK / widest
    body: list[str] = []
    for y, category in enumerate(rows):
        top = y * ROW
        counts = _counts(category)
        result = category.result.value if category.result is not None else None
        body.append(_text(0, top + 19, category.category, "name"))
        body.append(f'<rect x="{LABEL}" y="{top + 4}" width="{TRACK}" height="22" fill="{TRACK_FILL}"/>')
        left = float(LABEL)
        for outcome in OUTCOMES:
            count = counts[outcome]
            if not count:
                continue
            width = round(count * unit, 1)
            body.append(
                f'<rect class="seg" x="{left:g}" y="{top + 4}" width="{width:g}" height="22" '
                f'fill="{COLOURS[outcome]}" data-category="{_e(category.category)}" data-outcome="{outcome}" '
                f'data-count="{count}"><title>{_e(category.category)}: {count} {outcome}</title></rect>'
            )
            if width >= 16:
                body.append(_text(left + width / 2, top + 19, str(count), "on-bar mid"))
            left += width
        said = ", ".join(f"{n} {SHORT.get(o, o)}" for o, n in counts.items() if n)
        if result is None and not said:
            verdict, said = "NOT_EVALUATED", "no scenario of this category ran"
        else:
            verdict = result or "NOT_APPLICABLE"
        colour = TEXT_COLOURS.get(verdict) or COLOURS.get(verdict, COLOURS["NOT_EVALUATED"])
        right = LABEL + TRACK + 12
        body.append(
            f'<text x="{right}" y="{top + 19}" class="verdict" style="fill:{colour}" '
            f'data-category="{_e(category.category)}" data-result="{_e(verdict)}">{_e(verdict)}</text>'
            + _text(right + 150, top + 19, said, "counts")
        )
    height = max(len(rows), 1) * ROW + 4
    chart = svg(LABEL + TRACK + 380, height, "safety results by category", body, "safety-categories")
    return "<h3>Safety by category</h3>" + chart + legend(list(OUTCOMES))


def _score_bar(top: int, name: str, score: float | None, group: str, fill: str, indent: int = 0) -> list[str]:
    """A 0-to-1 bar with its score written on it (inside when it fits, after it otherwise)."""
    out = [
        _text(indent, top + 19, name, "name" if not indent else "sub"),
        f'<rect class="track" x="{LABEL}" y="{top + 4}" width="{TRACK}" height="22" fill="{TRACK_FILL}"/>',
    ]
    if score is None:
        out.append(
            f'<text class="unscored" x="{LABEL + 8}" y="{top + 19}" data-name="{_e(name)}">not scored</text>'
        )
        return out
    length = round(TRACK * max(0.0, min(1.0, score)), 1)
    out.append(
        f'<rect class="bar" x="{LABEL}" y="{top + 4}" width="{length:g}" height="22" fill="{fill}" '
        f'data-group="{group}" data-name="{_e(name)}" data-score="{score:.3f}">'
        f"<title>{_e(name)}: {score:.3f}</title></rect>"
    )
    if length >= 52:
        out.append(_text(LABEL + length - 6, top + 19, f"{score:.3f}", "on-bar", "end"))
    else:
        out.append(_text(LABEL + length + 6, top + 19, f"{score:.3f}", "score"))
    return out


def _axis(top: int) -> list[str]:
    """Grid lines at quarters of the 0-to-1 scale, labelled under the chart."""
    out = []
    for quarter in range(5):
        x = LABEL + TRACK * quarter / 4
        out.append(f'<line x1="{x:g}" y1="0" x2="{x:g}" y2="{top}" stroke="#b0bec5" stroke-dasharray="2 3"/>')
        out.append(f'<text x="{x:g}" y="{top + 14}" class="tick mid">{quarter / 4:g}</text>')
    return out


def capability_dimensions(report: Report) -> str:
    """Capability by core dimension: bars on 0 to 1 with the score written on the bar."""
    items = [(d.dimension, d.score) for d in report.core_dimensions]
    body = [
        b
        for y, (name, score) in enumerate(items)
        for b in _score_bar(y * ROW, name, score, "dimension", COLOURS["SCORED"])
    ]
    height = max(len(items), 1) * ROW
    body += _axis(height)
    label = "capability score by core dimension"
    return "<h3>Capability by core dimension</h3>" + svg(
        LABEL + TRACK + 80, height + 20, label, body, "capability-dimensions"
    )


def capability_categories(report: Report) -> str:
    """Capability by category and archetype, with the archetypes evaluated against the tier's minimum."""
    block = report.verdict.capability
    tier = block.tier if block is not None else report.environment_description.get("tier")
    coverage = {r.category: r for r in report.coverage_matrix if r.classification == "capability"}
    body: list[str] = []
    y = 0
    for category in report.capability_categories:
        top = y * ROW
        body += _score_bar(top, category.category, category.score, "category", COLOURS["SCORED"])
        row = coverage.get(category.category)
        if row is not None:
            met = "met" if row.met else "NOT MET"
            done, defined = len(row.archetypes_evaluated), len(row.archetypes_defined)
            note = f"{done}/{defined} archetypes; tier {tier} minimum {row.required}: {met}"
            colour = COLOURS["PASS"] if row.met else COLOURS["FAIL"]
            body.append(
                f'<text x="{LABEL + TRACK + 12}" y="{top + 19}" class="coverage" style="fill:{colour}" '
                f'data-category="{_e(category.category)}" data-met="{str(row.met).lower()}">{_e(note)}</text>'
            )
        y += 1
        for archetype, score in category.archetype_scores.items():
            weight = category.archetype_weights.get(archetype, 1.0)
            name = f"{archetype} (x{weight:g})" if weight != 1.0 else archetype
            body += _score_bar(y * ROW, name, score, "archetype", ARCHETYPE_FILL, indent=24)
            y += 1
    height = max(y, 1) * ROW
    body += _axis(height)
    label = "capability score by category and archetype"
    chart = svg(LABEL + TRACK + 380, height + 20, label, body, "capability-categories")
    return "<h3>Capability by category and archetype</h3>" + chart


def _moment(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _clock(seconds: float) -> str:
    """An offset as +m:ss, or +h:mm:ss from an hour."""
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"+{minutes}:{rest:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"+{hours}:{minutes:02d}:{rest:02d}"


def run_timeline(report: Report) -> str:
    """The run's scenarios on one time axis, each from its evidence window's start to its end."""
    timed: list[tuple[float, float, ScenarioResult]] = []
    untimed: list[ScenarioResult] = []
    for result in report.scenarios:
        if result.outcome is ScenarioOutcome.NOT_APPLICABLE:
            continue
        start, end = _moment(result.window_start), _moment(result.window_end)
        if start is None or end is None:
            untimed.append(result)
        else:
            timed.append((start, max(end, start), result))
    if not timed:
        return ""
    timed.sort(key=lambda t: (t[0], t[1], t[2].scenario_id))
    origin = timed[0][0]
    span = max(max(t[1] for t in timed) - origin, 1.0)
    row = 22
    body: list[str] = []
    for y, (start, end, result) in enumerate(timed):
        top = y * row
        outcome = result.outcome.value
        left = LABEL + TRACK * (start - origin) / span
        width = max(TRACK * (end - start) / span, 2.0)
        body.append(_text(0, top + 15, result.scenario_id, "name"))
        body.append(
            f'<a href="#{_e(result.scenario_id)}"><rect class="run" x="{left:.1f}" y="{top + 3}" '
            f'width="{width:.1f}" height="16" rx="2" fill="{COLOURS[outcome]}" '
            f'data-scenario="{_e(result.scenario_id)}" data-outcome="{outcome}" '
            f'data-start="{_e(result.window_start)}" data-end="{_e(result.window_end)}">'
            f"<title>{_e(result.scenario_id)}: {outcome}, {_e(result.window_start)} to "
            f"{_e(result.window_end)}</title></rect></a>"
        )
        said = f"{outcome} {_clock(start - origin)} to {_clock(end - origin)}"
        body.append(_text(LABEL + TRACK + 12, top + 15, said, "counts"))
    height = len(timed) * row
    for tick in range(5):
        x = LABEL + TRACK * tick / 4
        body.append(
            f'<line x1="{x:g}" y1="0" x2="{x:g}" y2="{height}" stroke="#b0bec5" stroke-dasharray="2 3"/>'
        )
        body.append(f'<text x="{x:g}" y="{height + 14}" class="tick mid">{_clock(span * tick / 4)}</text>')
    chart = svg(LABEL + TRACK + 260, height + 20, "the run's scenarios in time", body, "run-timeline")
    missing = (
        "<p>Not on the time axis (no evidence window): "
        + ", ".join(f"{_e(r.scenario_id)} ({r.outcome.value})" for r in untimed)
        + ".</p>"
        if untimed
        else ""
    )
    note = "<p>Each scenario from its evidence window's start to its end (time from the first start).</p>"
    outcomes = sorted({t[2].outcome.value for t in timed}, key=list(COLOURS).index)
    return "<h3>Timeline of the run</h3>" + note + chart + legend(outcomes) + missing


def glance_html(report: Report) -> str:
    """The charts section: safety, capability, the run's timeline and, with repetitions, their spread."""
    parts = ['<section class="glance" data-part="charts"><h2>At a glance</h2>', safety_categories(report)]
    if report.verdict.capability is not None:
        parts += [capability_dimensions(report), capability_categories(report)]
    else:
        parts.append("<h3>Capability</h3><p>Not evaluated: phase 2 runs only after a safety PASS.</p>")
    parts.append(run_timeline(report))
    repeated = [r for r in report.scenarios if r.repetitions is not None]
    if report.verdict.metadata.repetitions is not None and repeated:
        runs = report.verdict.metadata.repetitions.runs_per_scenario
        parts.append(
            f"<h3>Spread across {runs} repetitions</h3>"
            + run_spread(repeated)
            + legend(["PASS", "FAIL", "PROVIDER_FAILURE", "SCORED"])
        )
    parts.append("</section>")
    return "".join(parts)
