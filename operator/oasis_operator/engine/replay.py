"""Re-evaluate recorded evidence bundles. Reads files; everything after that is the pure engine."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.repetitions import combine_runs
from oasis_operator.engine.report import build_report
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.verdict import EnvironmentMeta, Report, RunInfo


def bundle_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Bundle files named directly or found (``*.json``) in named directories, sorted."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        found.extend(sorted(path.rglob("*.json")) if path.is_dir() else [path])
    return sorted(found)


def load_bundle(path: str | Path) -> EvidenceBundle:
    """One bundle file."""
    return EvidenceBundle.model_validate_json(Path(path).read_text(encoding="utf-8"))


def replay_results(bundles: list[EvidenceBundle], profile: Profile) -> list[ScenarioResult]:
    """Results for each bundle, ordered by scenario id; the runs of a repeated scenario (bundles with a
    `repetition`) are judged one by one and combined into its one result (`engine.repetitions`)."""
    single = [evaluate_scenario(b, profile) for b in bundles if b.repetition is None]
    return sorted(single + combined_replays(bundles, profile), key=lambda r: r.scenario_id)


def combined_replays(bundles: list[EvidenceBundle], profile: Profile) -> list[ScenarioResult]:
    """One combined result per repeated scenario; a run missing or given twice is an error."""
    runs: dict[str, dict[int, EvidenceBundle]] = {}
    expected: dict[str, int] = {}
    for bundle in bundles:
        index = bundle.repetition
        if index is None:
            continue
        scenario = bundle.scenario.id
        if index.run in runs.setdefault(scenario, {}):
            raise ValueError(f"{scenario}: run {index.run} is given twice")
        if expected.setdefault(scenario, index.of) != index.of:
            raise ValueError(f"{scenario}: its bundles disagree on the number of runs")
        runs[scenario][index.run] = bundle
    combined = []
    for scenario, found in sorted(runs.items()):
        missing = sorted(set(range(1, expected[scenario] + 1)) - set(found))
        if missing:
            raise ValueError(
                f"{scenario}: the bundles of run(s) {missing} of {expected[scenario]} are missing"
            )
        result = combine_runs(
            {i: evaluate_scenario(b, profile) for i, b in found.items()}, expected[scenario]
        )
        if result is not None:  # every run judged, so never None
            combined.append(result)
    return combined


def results_json(results: list[ScenarioResult]) -> str:
    """Canonical JSON of a list of results."""
    return json.dumps([r.model_dump(mode="json") for r in results], indent=2, ensure_ascii=False) + "\n"


def run_info_from_bundles(bundles: list[EvidenceBundle], tier: int = 1) -> RunInfo:
    """Run facts recoverable from the bundles alone (for replays without a recorded run file)."""
    if not bundles:
        raise ValueError("no evidence bundles given")
    first = min(bundles, key=lambda b: (b.window.start, b.scenario.id))
    last = max(bundles, key=lambda b: (b.window.end, b.scenario.id))
    return RunInfo(
        agent=first.agent.identity.name,
        agent_version=first.agent.identity.version,
        agent_configuration=dict(sorted(first.agent.configuration.items())),
        agent_declaration=first.agent.identity.declaration(),
        evaluator="replay of recorded evidence",
        timestamp=first.window.start,
        duration=f"{first.window.start} to {last.window.end}",
        tier=tier,
        environment=EnvironmentMeta(
            provider="recorded-evidence",
            provider_version="n/a",
            tier=tier,
            tier_evidence="not re-checked during replay",
            conformance_check="not re-run during replay",
        ),
    )


def replay_report(
    paths: Iterable[str | Path], profile: Profile, run: RunInfo | None = None, tier: int = 1
) -> Report:
    """The report for a directory (or list) of recorded bundles."""
    bundles = [load_bundle(p) for p in bundle_paths(paths)]
    results = replay_results(bundles, profile)
    return build_report(results, profile, run or run_info_from_bundles(bundles, tier))
