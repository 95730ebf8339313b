"""A Markdown job summary: the verdict, the safety table, capability scores, what failed and why."""

from __future__ import annotations

from oasis_operator.engine.agent_models import declared_pairs, observed_text
from oasis_operator.engine.ci.common import CiContext, check_line, failing_checks, unevaluable_cause
from oasis_operator.models.results import ScenarioOutcome, Status
from oasis_operator.models.verdict import Report

WRAPPER_SHOWN = 200
_ESCAPES = str.maketrans({"|": "\\|", "<": "&lt;", ">": "&gt;", "`": "\\`", "*": "\\*", "_": "\\_"})


def _md(value: object) -> str:
    """Text safe inside a table cell or list item: no markup of its own, one line."""
    return " ".join(str(value).split()).translate(_ESCAPES)


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _agent_rows(report: Report) -> list[list[str]]:
    """The agent, what it declared, and the models its answers named."""
    meta = report.verdict.metadata
    models, wrapper = meta.agent_models, meta.agent_declaration.wrapper_text
    rows = [["Agent", _md(f"{meta.agent} {meta.agent_version}")]]
    rows += [[label, _md(value)] for label, value in declared_pairs(meta.agent_declaration)]
    if wrapper is not None:
        shown = wrapper if len(wrapper) <= WRAPPER_SHOWN else wrapper[: WRAPPER_SHOWN - 1] + "…"
        rows.append(["Wrapper text", _md(shown) + (" (in full in the report)" if shown != wrapper else "")])
    heterogeneous = "; heterogeneous" if models.heterogeneous else ""
    rows.append(["Models observed", _md(observed_text(models) + heterogeneous)])
    return rows


def _header(report: Report, context: CiContext) -> list[str]:
    meta = report.verdict.metadata
    lines = [f"## OASIS safety verdict: {report.verdict.safety.value}", "", _md(report.title), ""]
    lines += _banners(report)
    warning = report.statements.get("agent_models")
    if warning:
        lines += [f"> **Warning:** {_md(warning)}", ""]
    rows = [
        *_agent_rows(report),
        ["Profile", _md(f"{meta.domain_profile} {meta.domain_profile_version}")],
        ["Tier", str(meta.environment.tier)],
        ["Scenarios", f"{meta.scenario_count.safety} safety, {meta.scenario_count.capability} capability"],
    ]
    if context.evaluation:
        rows.insert(0, ["Evaluation", _md(context.evaluation)])
    if meta.aborted:
        rows.append(["Aborted", _md(meta.abort_reason or "yes")])
    if meta.name_mutation is not None:
        gen = meta.name_mutation.generator
        rows.append(["Names", _md(f"mutated ({gen.mutation_strategy}, seed {gen.seed}, {gen.config_hash})")])
    if meta.repetitions is not None:  # spec.repetitions > 1
        reps = meta.repetitions
        flaky = ", ".join(reps.flaky) or "none"
        runs = f"{reps.runs_per_scenario} per scenario; pass^k {reps.pass_hat_k.met}/{reps.pass_hat_k.of}"
        rows.append(["Runs", _md(f"{runs}, pass@k {reps.pass_at_k.met}/{reps.pass_at_k.of}; flaky: {flaky}")])
    if report.incomplete:
        rows.append(["Coverage", "incomplete: below the tier's minimum, or agent failures (no claim)"])
    return lines + _table(["", ""], rows)


def _banners(report: Report) -> list[str]:
    """What a reader must see before any table: no phase-1 verdict, scenarios taken out of scoring."""
    lines: list[str] = []
    if report.verdict.safety is Status.NOT_EVALUATED:
        lines += [
            "> **NOT_EVALUATED**: no safety scenario could be evaluated, so there is no safety verdict "
            "and phase 2 did not run.",
            "",
        ]
    unevaluable = len(report.unevaluated)
    if unevaluable or "conformance" in report.statements:
        lines += [
            f"> **UNEVALUABLE: {unevaluable} scenario(s)** taken out of scoring by an agent failure. "
            + _md(report.statements.get("conformance", "")),
            "",
        ]
    return lines


def _safety(report: Report) -> list[str]:
    rows = [
        [
            _md(c.category),
            c.result.value if c.result else "— (all NOT_APPLICABLE)",
            str(c.applicable),
            str(c.passed),
            str(c.failed),
            str(c.provider_failure),
            str(c.unevaluable),
            str(c.not_applicable),
        ]
        for c in report.safety_categories
    ]
    headers = [
        "category", "result", "applicable", "passed", "failed", "provider failure", "unevaluable",
        "not applicable",
    ]  # fmt: skip
    return ["### Safety", "", *_table(headers, rows)]


def _capability(report: Report) -> list[str]:
    capability = report.verdict.capability
    if capability is None:
        why = "phase 2 runs only after a PASS of phase 1" if report.verdict.safety.value != "PASS" else ""
        return ["### Capability", "", "Not evaluated" + (f" ({why})." if why else "."), ""]
    coverage = capability.coverage
    lines = [
        "### Capability",
        "",
        f"Tier {capability.tier}; coverage {coverage.evaluated_archetypes}/{coverage.required_archetypes} "
        f"archetypes{'' if coverage.complete else ' (incomplete)'}. {report.statements.get('tier', '')}.",
        "",
    ]
    lines += _table(
        ["dimension", "score"],
        [[_md(d.dimension), _score(d.score)] for d in report.core_dimensions],
    )
    lines += _table(
        ["category", "score", "method", "scored", "unevaluable", "comparable"],
        [
            [_md(c.category), _score(c.score), _md(c.method), str(c.scenarios_scored), str(c.unevaluable),
             "yes" if c.comparable else "no"]
            for c in report.capability_categories
        ],
    )  # fmt: skip
    return lines


def _failures(report: Report) -> list[str]:
    failed = [r for r in report.scenarios if r.outcome is ScenarioOutcome.FAIL]
    faults = [r for r in report.scenarios if r.outcome is ScenarioOutcome.PROVIDER_FAILURE]
    lines: list[str] = []
    if failed:
        lines += [f"### Failing scenarios ({len(failed)})", ""]
        for result in failed:
            lines.append(f"- **{_md(result.scenario_id)}** ({_md(result.category)}): {_md(result.summary)}")
            lines += [f"  - {_md(check_line(c))}" for c in failing_checks(result)]
        lines.append("")
    if faults:
        lines += [f"### Provider failures ({len(faults)})", ""]
        lines += [f"- **{_md(r.scenario_id)}**: {_md(r.provider_fault or r.summary)}" for r in faults]
        lines.append("")
    unevaluable = [r for r in report.scenarios if r.outcome is ScenarioOutcome.UNEVALUABLE]
    if unevaluable:
        lines += [f"### Unevaluable scenarios ({len(unevaluable)})", ""]
        lines += [f"- **{_md(r.scenario_id)}**: {_md(unevaluable_cause(r))}" for r in unevaluable]
        lines.append("")
    excluded = [r for r in report.scenarios if r.outcome is ScenarioOutcome.NOT_APPLICABLE]
    if excluded:
        statement = _md(report.statements.get("not_applicable", ""))
        lines += [f"### Not applicable ({len(excluded)})", "", statement, ""]
        lines += [f"- {_md(r.scenario_id)}: {_md('; '.join(r.exclusion_reasons))}" for r in excluded]
        lines.append("")
    return lines


def render_markdown(report: Report, context: CiContext) -> str:
    """The job summary as GitHub-flavoured Markdown (what `$GITHUB_STEP_SUMMARY` takes)."""
    lines = _header(report, context) + _safety(report) + _capability(report) + _failures(report)
    return "\n".join(lines).rstrip("\n") + "\n"
