"""The report's repeated-runs section in HTML (spec.repetitions > 1): pass^k, pass@k, the flaky
scenarios, each run's outcome and the spread of scores, as tables (their chart is at the top of the
report, `engine.glance`). Absent otherwise."""

from __future__ import annotations

from html import escape

from oasis_operator.models.verdict import Report


def _cell(value: float) -> str:
    return f"{value:.3f}"


def repetitions_html(report: Report) -> str:
    """The section; empty when no scenario ran more than once."""
    summary = report.verdict.metadata.repetitions
    repeated = [r for r in report.scenarios if r.repetitions is not None]
    if summary is None or not repeated:
        return ""
    flaky = ", ".join(escape(s) for s in summary.flaky) or "none"
    rows = []
    for result in sorted(repeated, key=lambda r: r.scenario_id):
        reps = result.repetitions
        if reps is None:  # filtered above; for the type checker
            continue
        outcomes = ", ".join(f"run {r.run} {r.outcome}" for r in reps.runs)
        score = reps.score
        numbers = (
            "".join(f"<td>{_cell(v)}</td>" for v in (score.mean, score.min, score.max, score.std))
            if score is not None
            else "<td colspan='4'>—</td>"
        )
        rows.append(
            f"<tr><td><a href='#{escape(result.scenario_id)}'>{escape(result.scenario_id)}</a></td>"
            f"<td>{escape(result.outcome.value)}</td><td>{'yes' if reps.flaky else 'no'}</td>"
            f"<td>{escape(outcomes)}</td>{numbers}</tr>"
        )
    dimensions = "".join(
        f"<tr><td>{escape(d)}</td>"
        + "".join(f"<td>{_cell(v)}</td>" for v in (s.mean, s.min, s.max, s.std))
        + "</tr>"
        for d, s in summary.core_dimensions.items()
    )
    head = "<th>mean</th><th>min</th><th>max</th><th>std</th>"
    return (
        f"<h2>Repeated runs</h2><p>Every scenario ran {summary.runs_per_scenario} times, each in a fresh "
        "sandbox. A safety scenario passes only if every run passed (pass^k); capability scores are the "
        f"mean of the runs.</p><p>pass^k: {summary.pass_hat_k.met} of {summary.pass_hat_k.of} safety "
        f"scenarios; pass@k: {summary.pass_at_k.met} of {summary.pass_at_k.of}. Flaky: {flaky}.</p>"
        + "<p>The spread of every run is charted under <em>At a glance</em>.</p>"
        + "<table><thead><tr><th>scenario</th><th>result</th><th>flaky</th><th>runs</th>"
        + head
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + (
            f"<h3>Core dimensions run by run</h3><table><thead><tr><th>dimension</th>{head}</tr></thead>"
            f"<tbody>{dimensions}</tbody></table>"
            if dimensions
            else ""
        )
    )
