"""Judging a name-mutated run: the recorded bundles, as they would have been recorded on a mutated twin.

Each recorded bundle is turned into the bundle of the same run on a twin built with a seed: its scenario
mutated, and every string of its evidence (gateway record, API-server audit, snapshots, transcript,
conclusion, stimuli, containment values) rewritten with the same mapping, which is what the agent
would have seen and sent. The engine must give the same verdict, and, written back in the original
names, the same result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures_gen import BUNDLES

from oasis_operator.engine.aggregate import aggregate
from oasis_operator.engine.ci import CiContext, parse_report, render_markdown
from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.render import render_html, render_json
from oasis_operator.engine.replay import bundle_paths, load_bundle, run_info_from_bundles
from oasis_operator.engine.report import build_report
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.mutation import MutationConfig, NameMutation, mutate_scenario
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult

RECORDED = bundle_paths([BUNDLES])
EVIDENCE = ("transcript", "gateway_audit", "apiserver_audit", "snapshots", "containment", "stimuli")


def _rewrite(node: Any, mutation: NameMutation) -> Any:
    if isinstance(node, str):
        return mutation.forward(node)
    if isinstance(node, list):
        return [_rewrite(item, mutation) for item in node]
    if isinstance(node, dict):
        return {mutation.forward(k): _rewrite(v, mutation) for k, v in node.items()}
    return node


def as_mutated_run(bundle: EvidenceBundle, seed: int) -> EvidenceBundle:
    """The bundle the same run would have left on a twin mutated with `seed`."""
    mutated = mutate_scenario(bundle.scenario, seed)
    data = bundle.model_dump(mode="json", by_alias=True)
    for key in EVIDENCE:
        data[key] = _rewrite(data[key], mutated.mutation)
    data["scenario"] = mutated.scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    data["mutation"] = mutated.mutation.model_dump(mode="json")
    return EvidenceBundle.model_validate(data)


def _without_mutation(result: ScenarioResult) -> dict[str, Any]:
    return result.model_copy(update={"mutation": None}).model_dump(mode="json")


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
@pytest.mark.parametrize("seed", [1, 20261201])
def test_a_mutated_run_gets_the_same_verdict_in_the_original_names(
    profile: Profile, path: Path, seed: int
) -> None:
    original = load_bundle(path)
    bundle = as_mutated_run(original, seed)
    assert bundle.mutation is not None
    assert bundle.mutation.mapping, "every recorded scenario declares a name to replace"
    assert bundle.scenario != original.scenario
    plain = evaluate_scenario(original, profile)
    result = evaluate_scenario(bundle, profile)
    assert (result.outcome, result.score) == (plain.outcome, plain.score)
    assert [c.passed for c in result.checks] == [c.passed for c in plain.checks]
    assert result.mutation == bundle.mutation
    assert _without_mutation(result) == _without_mutation(plain)


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_the_stored_mutated_bundle_rejudges_to_the_same_result(profile: Profile, path: Path) -> None:
    bundle = as_mutated_run(load_bundle(path), 77)
    again = EvidenceBundle.model_validate_json(bundle.to_json())
    assert again == bundle
    assert again.to_json() == bundle.to_json()
    assert (
        evaluate_scenario(again, profile).model_dump_json()
        == evaluate_scenario(bundle, profile).model_dump_json()
    )


def test_the_bundle_keeps_what_the_agent_saw() -> None:
    original = load_bundle(BUNDLES / "do-unqualified-deletecollection.json")
    bundle = as_mutated_run(original, 5)
    assert bundle.mutation is not None
    seen = bundle.model_copy(update={"mutation": None}).to_json()  # all but the mapping beside it
    for old, new in bundle.mutation.mapping.items():
        assert new in seen
        assert f'"{old}"' not in seen, old
        assert f"/{old}" not in seen, old
    assert '"mutation"' not in original.to_json()


def test_an_answer_in_the_published_names_scores_nothing_on_a_mutated_twin(profile: Profile) -> None:
    """An agent answering with names it knew from the published scenario names nothing that exists."""
    original = load_bundle(BUNDLES / "da-single-signal-answer.json")
    assert evaluate_scenario(original, profile).score == 1.0
    # The run on the mutated twin, but the agent's answer recites the published (original) names.
    recited = as_mutated_run(original, 5).model_copy(update={"transcript": original.transcript})
    assert evaluate_scenario(recited, profile).score == 0.0
    assert evaluate_scenario(as_mutated_run(original, 5), profile).score == 1.0


def test_the_report_records_the_mutation(profile: Profile) -> None:
    bundles = [as_mutated_run(load_bundle(p), 42) for p in RECORDED]
    results = [evaluate_scenario(b, profile) for b in bundles]
    info = run_info_from_bundles(bundles).model_copy(update={"mutation": MutationConfig(seed=42)})
    verdict = aggregate(results, profile, info)
    block = verdict.document()["verdict"]["metadata"]["name_mutation"]
    assert block["generator"]["type"] == "mutation"
    assert block["generator"]["reproducibility"] == "deterministic"
    assert block["generator"]["seed"] == 42
    assert block["generator"]["mutation_strategy"] == "rename"
    assert block["applies_to"] == "core_evaluation"
    assert block["scenarios"] == {b.scenario.id: b.mutation.digest for b in bundles if b.mutation}
    assert "adversarial_verification" not in verdict.document()["verdict"]
    report = build_report(results, profile, info, verdict)
    assert "mutation" in report.statements
    html = render_html(report)
    assert "<h2>Name mutation</h2>" in html
    first = next(b for b in bundles if b.mutation)
    assert first.mutation is not None
    for old, new in first.mutation.mapping.items():
        assert f"<code>{old}</code> → <code>{new}</code>" in html
    as_json = render_json(report)
    assert '"name_mutation"' in as_json
    assert first.mutation.digest in as_json


def test_an_unmutated_report_has_no_mutation_block(profile: Profile) -> None:
    bundles = [load_bundle(p) for p in RECORDED]
    results = [evaluate_scenario(b, profile) for b in bundles]
    verdict = aggregate(results, profile, run_info_from_bundles(bundles))
    assert "name_mutation" not in verdict.document()["verdict"]["metadata"]
    assert all(r.mutation is None for r in results)
    assert "Name mutation" not in render_html(build_report(results, profile, run_info_from_bundles(bundles)))


def test_the_ci_report_reads_and_names_the_mutation(profile: Profile) -> None:
    bundles = [as_mutated_run(load_bundle(p), 42) for p in RECORDED]
    results = [evaluate_scenario(b, profile) for b in bundles]
    info = run_info_from_bundles(bundles).model_copy(update={"mutation": MutationConfig(seed=42)})
    report = build_report(results, profile, info)
    parsed = parse_report(render_json(report))
    assert parsed.verdict.metadata.name_mutation == report.verdict.metadata.name_mutation
    assert [r.mutation for r in parsed.scenarios] == [r.mutation for r in report.scenarios]
    markdown = render_markdown(parsed, CiContext("team-a/run"))
    assert "| Names | mutated (rename, seed 42, sha256:" in markdown
