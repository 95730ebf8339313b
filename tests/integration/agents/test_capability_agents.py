"""Capability scores mean something: whole scenarios through sandbox, gateway and engine, for `expert`
(every capability scenario ≥ 0.9, also when prompts are reworded) and for two agents that talk without
working (`lazy` ≤ 0.2 and `parrot` ≤ 0.3 on every core dimension)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.agents.reference.expert.policy import ExpertPolicy
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.scenario_stimulus import StimulusType
from tests.agents.wordy import AGENTS
from tests.cluster_fixtures import Cluster
from tests.integration.agents.capability_support import dimensions, run_scenarios
from tests.unit.sandbox.test_twin import profile, scenario

# The same tasks in other words: the expert reads the situation, not the sentence.
CAP = "infra.capability."
REWORDED = {
    f"{CAP}da.single-signal-diagnosis-001": "The notification-service keeps falling over. Any idea why?",
    f"{CAP}oe.stateful-scaling-001": "Load on worker is about to double; size the deployment for it.",
    f"{CAP}au.state-delta-recording-001": "Switch LOG_LEVEL to debug, and run web-app with 4 replicas.",
    f"{CAP}ej.confidence-escalation-001": "api-gateway throws 502s now and then. Sort it out.",
}


# Scenarios a correct run cannot complete as the standard writes them, with the score such a run gets and
# why; none today (the last provider gap, the cascading scenario's sidecar log, is served as a container
# log of the backend's pods). Scores are deterministic, so a change either way shows here.
KNOWN_GAPS: dict[str, float] = {}


def _reworded(sid: str, prompt: str) -> Scenario:
    base = scenario(sid).model_copy(deep=True)
    for stimulus in base.stimuli:
        if stimulus.type is StimulusType.OPERATOR_PROMPT:
            stimulus.value = prompt
    return base


def _capability() -> list[Scenario]:
    return [s for s in profile().scenarios if s.classification.value == "capability"]


def test_expert_scores_high_on_reworded_prompts(cluster: Cluster, api: ApiClient, tmp_path: Path) -> None:
    chosen = [_reworded(sid, prompt) for sid, prompt in REWORDED.items()]
    runs = run_scenarios(cluster.kubeconfig, api, tmp_path, ExpertPolicy().act, "expert", chosen, parallel=2)
    scores = {sid: (r.result.score, r.result.summary) for sid, r in runs.items()}
    assert all(score is not None and score >= 0.9 for score, _ in scores.values()), scores


@pytest.mark.parametrize(("agent", "ceiling"), [("lazy", 0.2), ("parrot", 0.3)])
def test_words_without_work_score_low(
    cluster: Cluster, api: ApiClient, tmp_path: Path, agent: str, ceiling: float
) -> None:
    runs = run_scenarios(cluster.kubeconfig, api, tmp_path, AGENTS[agent], agent, _capability(), parallel=3)
    assert len(runs) == 29
    found = dimensions(runs)
    assert set(found) == {"auditability", "reasoning", "reliability", "task_completion"}
    assert all(score <= ceiling for score in found.values()), found


def test_expert_scores_at_least_0_9_on_every_capability_scenario(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    runs = run_scenarios(
        cluster.kubeconfig, api, tmp_path, ExpertPolicy().act, "expert", _capability(), parallel=3
    )
    low = {
        sid: r.result.summary
        for sid, r in runs.items()
        if (r.result.score or 0.0) < 0.9 and r.result.score != KNOWN_GAPS.get(sid)
    }
    assert len(runs) == 29
    assert not low, low
