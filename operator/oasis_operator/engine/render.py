"""Render a verdict or report as YAML, JSON or one self-contained HTML page. Same input, same bytes."""

from __future__ import annotations

import json
from html import escape
from typing import Any

import yaml

from oasis_operator.engine import charts
from oasis_operator.engine.agent_models import declaration_html, observed_text
from oasis_operator.engine.glance import CSS as GLANCE_CSS
from oasis_operator.engine.glance import glance_html
from oasis_operator.engine.mutation_report import mutation_html
from oasis_operator.engine.render_banner import CSS as BANNER_CSS
from oasis_operator.engine.render_banner import banner_html
from oasis_operator.engine.render_repetitions import repetitions_html
from oasis_operator.engine.render_timings import timings_html
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import Report, Verdict


def _document(item: Report | Verdict) -> dict[str, Any]:
    if isinstance(item, Verdict):
        return item.document()
    data = item.model_dump(mode="json")
    data["verdict"] = item.verdict.document()["verdict"]
    if not data.get("unevaluated"):
        data.pop("unevaluated", None)  # present only when a scenario could not be judged
    if not data.get("timings"):
        data.pop("timings", None)  # present only when the runner measured phases (not on replay)
    else:
        data["timings"] = {
            k: {p: v for p, v in t.items() if v is not None} for k, t in data["timings"].items()
        }
    return {"report": data}


def render_json(item: Report | Verdict) -> str:
    """JSON text with a fixed key order and a trailing newline."""
    return json.dumps(_document(item), indent=2, ensure_ascii=False) + "\n"


# libyaml's emitter when PyYAML has it (its wheels do): the same text as the Python SafeDumper (checked on
# every shipped scenario's verdict and report), about five times faster on a whole-profile report.
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def render_yaml(item: Report | Verdict) -> str:
    """YAML text in the models' field order."""
    return yaml.dump(_document(item), Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=100)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#1d1d1f}
h1{font-size:1.5rem}h2{margin-top:2rem;border-bottom:1px solid #ccc}h3{margin-bottom:.3rem}
table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
.PASS{color:#0a7d24;font-weight:bold}.FAIL{color:#b00020;font-weight:bold}
.PROVIDER_FAILURE{color:#a05a00;font-weight:bold}.NOT_APPLICABLE,.SCORED{color:#555;font-weight:bold}
.UNEVALUABLE,.NOT_EVALUATED{color:#6a1b9a;font-weight:bold}
.flag{background:#fff3cd;padding:0 .3rem}.incomplete{background:#b00020;color:#fff;padding:.2rem .5rem}
.statement{font-style:italic}code{font-size:.9em}details{margin:.5rem 0}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _status(value: object) -> str:
    text = "—" if value is None else str(value)
    return f'<span class="{_e(text)}">{_e(text)}</span>'


def _kv(pairs: list[tuple[str, object]]) -> str:
    return _table(["field", "value"], [[_e(k), _e(v)] for k, v in pairs])


def _metadata(report: Report) -> str:
    meta = report.verdict.metadata
    env = meta.environment
    config = ", ".join(f"{k}={v}" for k, v in meta.agent_configuration.items()) or "none reported"
    return "<h2>Report metadata</h2>" + _kv(
        [
            ("Agent", f"{meta.agent} {meta.agent_version}"),
            ("Agent configuration", config),
            ("Model", f"declared {meta.agent_models.declared or 'none'}; {observed_text(meta.agent_models)}"),
            ("Evaluator", meta.evaluator),
            ("Date", meta.timestamp),
            ("Duration", meta.duration),
            ("OASIS core version", meta.oasis_core_version),
            ("Domain profile", f"{meta.domain_profile} {meta.domain_profile_version}"),
            ("Implementation", f"{report.implementation['name']} {report.implementation['version']}"),
            ("Environment provider", f"{env.provider} {env.provider_version}"),
            ("Preflight conformance check", env.conformance_check),
            ("Aborted", f"{meta.aborted}" + (f" — {meta.abort_reason}" if meta.abort_reason else "")),
        ]
    )


def _environment(report: Report) -> str:
    env = report.environment_description
    items = "".join(f"<li>{_e(c)}</li>" for c in env.get("characteristics", []))
    return (
        "<h2>Environment</h2>"
        + _kv(
            [
                ("Complexity tier", env.get("tier")),
                ("Tier evidence", env.get("tier_evidence")),
                ("Lab framework", env.get("lab_framework")),
            ]
        )
        + (f"<ul>{items}</ul>" if items else "")
    )


def _scenario_row(r: ScenarioResult) -> list[str]:
    tolerance = (
        f'<span class="flag">{r.safety_tolerance:g}% — human review</span>'
        if r.safety_tolerance > 0
        else "0%"
    )
    deviation = (
        f"{r.measured_deviation:g}%" if r.safety_tolerance > 0 and r.measured_deviation is not None else "—"
    )
    fault = f"<br>fault: {_e(r.provider_fault)}" if r.provider_fault else ""
    return [
        f"<a href='#{_e(r.scenario_id)}'>{_e(r.scenario_id)}</a><br>{_e(r.description)}",
        _e(r.archetype),
        _status(r.outcome.value),
        tolerance,
        deviation,
        _e(r.summary) + fault,
    ]


def _safety(report: Report) -> str:
    verdict = report.verdict
    parts = [f"<h2>Safety summary</h2><p>Overall safety result: {_status(verdict.safety.value)}</p>"]
    parts.append(
        _table(
            [
                "category",
                "result",
                "applicable",
                "NOT_APPLICABLE",
                "passed",
                "failed",
                "provider failure",
                "unevaluable",
                "comparable",
            ],
            [
                [
                    _e(c.category),
                    _status(c.result.value if c.result else None),
                    str(c.applicable),
                    str(c.not_applicable),
                    str(c.passed),
                    str(c.failed),
                    str(c.provider_failure),
                    str(c.unevaluable),
                    "yes" if c.comparable else "no",
                ]
                for c in report.safety_categories
            ],
        )
    )
    if report.subcategories:
        rows = [
            [_e(c), _e(s), str(n.total), str(n.passed), str(n.failed), str(n.provider_failure)]
            for c, subs in report.subcategories.items()
            for s, n in subs.items()
        ]
        parts.append(
            "<h3>Subcategories</h3>"
            + _table(["category", "subcategory", "total", "passed", "failed", "provider failure"], rows)
        )
    safety = [
        r
        for r in report.scenarios
        if r.classification == "safety" and r.outcome is not ScenarioOutcome.NOT_APPLICABLE
    ]
    parts.append(
        "<h3>Scenarios (failures first)</h3>"
        + _table(
            ["scenario", "archetype", "result", "safety_tolerance", "deviation", "evidence summary"],
            [_scenario_row(r) for r in safety],
        )
    )
    excluded = [r for r in report.scenarios if r.outcome is ScenarioOutcome.NOT_APPLICABLE]
    parts.append("<h3>Excluded scenarios (NOT_APPLICABLE)</h3>")
    parts.append(f'<p class="statement">{_e(report.statements["not_applicable"])}</p>')
    parts.append(
        _table(
            ["scenario", "category", "configuration condition(s)"],
            [[_e(r.scenario_id), _e(r.category), _e("; ".join(r.exclusion_reasons))] for r in excluded],
        )
        if excluded
        else "<p>None.</p>"
    )
    review = verdict.safety_details.human_review
    parts.append("<h3>Human Review Required</h3>")
    parts.append(
        "<p>These scenarios PASSed under a non-zero safety_tolerance. The flag is a prompt to check the "
        "tolerance, not a verdict status.</p>"
        + _table(
            ["scenario", "tolerance", "measured deviation", "result"],
            [
                [_e(h.scenario_id), _e(h.tolerance), _e(h.measured_deviation), _status(h.result.value)]
                for h in review
            ],
        )
        if review
        else "<p>None: no scenario used a non-zero tolerance.</p>"
    )
    return "".join(parts)


def _comparability(scored: int, unevaluable: int, comparable: bool) -> str:
    return f"{scored} scored, {unevaluable} unevaluable" + ("" if comparable else " (not comparable)")


def _capability(report: Report) -> str:
    block = report.verdict.capability
    if block is None:
        return "<h2>Capability summary</h2><p>Not evaluated: phase 2 runs only after a safety PASS.</p>"
    statement = _e(report.statements["tier"])
    parts = [f'<h2>Capability summary — tier {block.tier}</h2><p class="statement">{statement}</p>']
    rows = [
        [
            _e(c.category),
            _e("—" if c.score is None else f"{c.score:.3f}"),
            _e(f"tier {block.tier}"),
            _e(c.method),
            _e(
                ", ".join(
                    f"{a}: {s:.3f} (x{c.archetype_weights.get(a, 1.0):g})"
                    for a, s in c.archetype_scores.items()
                )
            ),
            _e(", ".join(c.maps_to_dimensions)),
            _e(_comparability(c.scenarios_scored, c.unevaluable, c.comparable)),
        ]
        for c in report.capability_categories
    ]
    headers = ["category", "score", "tier", "aggregation", "archetypes", "core dimensions", "scenarios"]
    parts.append(_table(headers, rows))
    dims = [
        [
            _e(d.dimension),
            _e("—" if d.score is None else f"{d.score:.3f}"),
            _e(f"tier {block.tier}"),
            _e(", ".join(f"{c} {w:g}" for c, w in d.contributions.items())),
        ]
        for d in report.core_dimensions
    ]
    parts.append(_table(["core dimension", "score", "tier", "contributing categories and weights"], dims))
    return "".join(parts)


def _coverage(report: Report) -> str:
    rows = [
        [
            _e(r.category),
            _e(r.classification),
            str(r.required),
            _e(", ".join(r.archetypes_evaluated) or "none"),
            _e("; ".join(f"{a}: {why}" for a, why in r.archetypes_skipped.items()) or "—"),
            _e("yes" if r.met else "no"),
            _e(
                f"{r.not_applicable}"
                + (f" ({'; '.join(r.not_applicable_conditions)})" if r.not_applicable_conditions else "")
            ),
        ]
        for r in report.coverage_matrix
    ]
    cov = report.verdict.metadata.configuration_coverage
    warnings = "".join(f"<li>{_e(w)}</li>" for w in cov.warnings)
    met = "not met — evaluation incomplete" if report.incomplete else "met"
    return (
        f"<h2>Coverage matrix</h2><p>Minimum coverage for the claimed tier: <strong>{_e(met)}</strong></p>"
        + _table(
            ["category", "kind", "required", "evaluated", "skipped (why)", "met", "NOT_APPLICABLE"], rows
        )
        + (
            f"<h3>Configuration coverage warnings</h3><ul>{warnings}</ul>"
            if warnings
            else "<p>No configuration coverage warnings.</p>"
        )
    )


def _detail(r: ScenarioResult) -> str:
    checks = sorted(r.checks, key=lambda c: c.passed)
    check_rows = [
        [
            _status("PASS" if c.passed else "FAIL") + (" (attempted only)" if c.attempted_only else ""),
            _e(c.block),
            _e(c.subject),
            _e(c.method),
            _e(c.detail),
            "<br>".join(f"<code>{_e(x)}</code>" for x in c.evidence),
        ]
        for c in checks
    ]
    opened = " open" if r.outcome in (ScenarioOutcome.FAIL, ScenarioOutcome.UNEVALUABLE) else ""
    sources = ", ".join(
        f"{s.name}: {s.evidence_source.type} ({s.evidence_source.status.value})" for s in r.evidence_sources
    )
    result = r.outcome.value + (f" — score {r.score:.3f}" if r.score is not None else "")
    lists = [
        ("Stimuli", r.stimuli),
        ("Preconditions observed", r.preconditions_observed),
        ("Tool calls", r.agent_actions),
    ]
    body = "".join(
        f"<h4>{_e(t)}</h4><ul>{''.join(f'<li>{_e(i)}</li>' for i in items)}</ul>"
        for t, items in lists
        if items
    )
    return (
        f"<details id='{_e(r.scenario_id)}'{opened}><summary>{_status(r.outcome.value)} "
        f"{_e(r.scenario_id)} — {_e(r.name)}</summary>"
        f"<p>{_e(r.description)}</p>"
        + _kv(
            [
                ("Result", result),
                ("Category / archetype", f"{r.category} / {r.archetype}"),
                ("Evidence sources", sources or "none"),
                ("Window", f"{r.window_start} to {r.window_end}"),
                ("Reasoning", r.reasoning_excerpt or "—"),
                ("Final answer", r.final_answer_excerpt or "—"),
                *([("Model", r.agent_model)] if r.agent_model else []),
                *(
                    [("Agent failure", f"{r.agent_failure.cause} ({r.agent_failure.source.value})")]
                    if r.agent_failure
                    else []
                ),
                *(
                    [("Names", f"mutated, mapping {r.mutation.digest} (names shown as declared)")]
                    if r.mutation
                    else []
                ),
            ]
        )
        + body
        + charts.timeline(r)
        + (
            _table(["result", "block", "checked", "method", "finding", "evidence"], check_rows)
            if check_rows
            else ""
        )
        + "</details>"
    )


def render_html(report: Report) -> str:
    """One HTML page with inline CSS and SVG charts, no scripts and no external resources: the verdict
    banner first, then the charts read at a glance, then the metadata and the tables."""
    decisions = "".join(f"<li>{_e(d)}</li>" for d in report.decisions)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(report.title)}</title><style>{_CSS}{charts.CSS}{GLANCE_CSS}{BANNER_CSS}</style></head><body>",
        f"<h1>{_e(report.title)}</h1>",
        banner_html(report),
        glance_html(report),
        _metadata(report),
        declaration_html(report),
        *filter(None, [mutation_html(report)]),
        _environment(report),
        _safety(report),
        _capability(report),
        _coverage(report),
        *filter(None, [repetitions_html(report)]),  # spec.repetitions > 1
        *filter(None, [timings_html(report)]),
        "<h2>Scenario detail</h2>",
        *(_detail(r) for r in report.scenarios if r.outcome is not ScenarioOutcome.NOT_APPLICABLE),
        f"<h2>Evaluation rules applied</h2><ul>{decisions}</ul>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
