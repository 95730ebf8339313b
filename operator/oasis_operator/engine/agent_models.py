"""The agent's declaration and the models its answers named, for the verdict and the report (pure).

**Heterogeneity.** Each judged scenario's result carries the model the agent's answer named (from the
evidence bundle's transcript, so a replay finds the same). A run is *heterogeneous* when its answers
named more than one model, or a model other than the one its identity declared. Answers that named no
model are counted (`unreported`) but are no evidence of a difference: a run in which no answer named a
model is not heterogeneous, whatever the identity declared. A heterogeneous run's verdict stands as
judged; its scores describe a mixture of models, and the report says so.
"""

from __future__ import annotations

import json
from collections import Counter
from html import escape

from oasis_operator.models.agent_identity import AgentDeclaration, AgentModels, ModelUse
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.verdict import Report

# Declared fields as the report labels them, in the order it shows them.
LABELS = (
    ("binary_version", "Binary version"),
    ("binary_digest", "Binary digest"),
    ("config_hash", "Configuration hash"),
    ("system_prompt_hash", "System-prompt hash"),
    ("model", "Declared model"),
    ("provider", "Model provider"),
)


def agent_models(declared: str | None, results: list[ScenarioResult]) -> AgentModels:
    """Declared and observed models of a run, and whether they differ (see the module docstring)."""
    answered = [r for r in results if r.outcome is not ScenarioOutcome.NOT_APPLICABLE]
    counts = Counter(r.agent_model for r in answered if r.agent_model is not None)
    observed = [
        ModelUse(model=m, scenarios=n) for m, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))
    ]
    differs = len(counts) > 1 or (declared is not None and any(m != declared for m in counts))
    return AgentModels(
        declared=declared,
        observed=observed,
        unreported=sum(1 for r in answered if r.agent_model is None),
        heterogeneous=differs,
    )


def observed_text(models: AgentModels) -> str:
    """The observed models in one line, e.g. `m-1 (12 scenarios), m-2 (1 scenario); 3 named none`."""
    named = ", ".join(
        f"{u.model} ({u.scenarios} scenario{'s' if u.scenarios != 1 else ''})" for u in models.observed
    )
    none = f"{models.unreported} named none" if models.unreported else ""
    return "; ".join(p for p in (named or "no answer named a model", none) if p)


def heterogeneity_warning(models: AgentModels) -> str | None:
    """The report's warning for a heterogeneous run, or None."""
    if not models.heterogeneous:
        return None
    declared = f"declared {models.declared}; " if models.declared else ""
    return (
        f"Heterogeneous models: the agent's answers did not all come from one model ({declared}observed "
        f"{observed_text(models)}). The verdict stands as judged, but its scores describe a mixture of "
        "models and are not comparable with a single-model run."
    )


def declared_pairs(declaration: AgentDeclaration) -> list[tuple[str, str]]:
    """(label, value) of every declared field but the wrapper text and additional keys, in report order."""
    return [(label, str(getattr(declaration, key))) for key, label in LABELS if getattr(declaration, key)]


def declaration_html(report: Report) -> str:
    """The report's section on the agent's declaration: declared fields, models, wrapper text, others."""
    meta = report.verdict.metadata
    declaration, models = meta.agent_declaration, meta.agent_models
    rows = [(label, value) for label, value in declared_pairs(declaration)]
    rows.append(("Models observed", observed_text(models)))
    rows.append(("Heterogeneous", "yes" if models.heterogeneous else "no"))
    table = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in rows)
    parts = [
        "<h2>Agent declaration</h2>",
        ""
        if declared_pairs(declaration)
        else "<p>The agent declared nothing beyond its name and version.</p>",
        f"<table><tbody>{table}</tbody></table>",
    ]
    if declaration.wrapper_text is not None:
        parts.append(f"<h3>Wrapper text</h3><pre>{escape(declaration.wrapper_text)}</pre>")
    if declaration.additional:
        shown = json.dumps(declaration.additional, indent=2, sort_keys=True, ensure_ascii=False)
        parts.append(f"<h3>Other declared keys</h3><pre>{escape(shown)}</pre>")
    return "".join(parts)
