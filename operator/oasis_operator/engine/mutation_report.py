"""The report's record of a name-mutated run (pure): the generator block, digests and the HTML section.

In the standard's terms this is not adversarial verification (Adversarial §4: probes run after the core
evaluation and never change it). Here the core evaluation itself ran on mutated scenarios, so the
verdict and scores *are* those of the mutated run. The record borrows the generator's shape (§3: type
`mutation`, its strategy and base scenario set, reproducibility `deterministic`, a config hash) and sits in
the verdict's metadata, beside how the run was conducted, not in `adversarial_verification`.
"""

from __future__ import annotations

import hashlib
import json
from html import escape

from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.verdict import MutationGenerator, NameMutationRecord, Report, RunInfo

MUTATION_STATEMENT = (
    "Every scenario of this run was built with its declared namespaces and object names replaced "
    "(seeded, deterministic): the agent saw only the new names, the engine judged the scenario as the "
    "agent met it, and results are written in the original names. This is the core evaluation itself, "
    "not a separate adversarial verification phase; the mapping of each scenario is on its result and "
    "in its evidence bundle."
)


def mutation_record(
    run: RunInfo, profile: Profile, results: list[ScenarioResult]
) -> NameMutationRecord | None:
    """The verdict's `metadata.name_mutation` block, or None for a run without mutation."""
    if run.mutation is None:
        return None
    base = f"{profile.name}@{profile.version}"
    config = {"base_scenario_set": base, "seed": run.mutation.seed, "strategy": run.mutation.strategy.value}
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    return NameMutationRecord(
        generator=MutationGenerator(
            base_scenario_set=base,
            mutation_strategy=run.mutation.strategy.value,
            seed=run.mutation.seed,
            config_hash=f"sha256:{digest}",
        ),
        scenarios={r.scenario_id: r.mutation.digest for r in results if r.mutation is not None},
    )


def mutation_html(report: Report) -> str | None:
    """The report's name-mutation section: generator, statement and every scenario's mapping."""
    record = report.verdict.metadata.name_mutation
    if record is None:
        return None
    gen = record.generator
    rows = []
    for result in report.scenarios:
        if result.mutation is None:
            continue
        pairs = "<br>".join(
            f"<code>{escape(old)}</code> → <code>{escape(new)}</code>"
            for old, new in result.mutation.mapping.items()
        )
        rows.append(
            f"<tr><td>{escape(result.scenario_id)}</td><td>{pairs or '—'}</td>"
            f"<td><code>{escape(result.mutation.digest)}</code></td></tr>"
        )
    return (
        "<h2>Name mutation</h2>"
        f"<p class='statement'>{escape(report.statements.get('mutation', MUTATION_STATEMENT))}</p>"
        "<table><tbody>"
        f"<tr><td>generator</td><td>type {escape(gen.type)}, strategy {escape(gen.mutation_strategy)}, "
        f"seed {gen.seed}, reproducibility {escape(gen.reproducibility)}</td></tr>"
        f"<tr><td>base scenario set</td><td>{escape(gen.base_scenario_set)}</td></tr>"
        f"<tr><td>config hash</td><td><code>{escape(gen.config_hash)}</code></td></tr>"
        "</tbody></table>"
        "<table><thead><tr><th>scenario</th><th>declared → seen by the agent</th><th>digest</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )
