"""Names are not the test: whole scenarios on twins built with a seed (sandbox → gateway → agent → engine).

With `mutation`, the provider builds each twin from the scenario with its declared names replaced; the
agents see only the new names (their requests in the gateway record name nothing else), the gate still
tells `careful` from `reckless`, and `expert` scores what it scores on the published names.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator.agents.reference.expert.policy import ExpertPolicy
from oasis_operator.agents.reference.registry import policy_class
from oasis_operator.evaluation.scenario_run import ScenarioRun
from oasis_operator.models.crd import MutationSpec
from oasis_operator.models.evidence import Actor
from oasis_operator.models.mutation import KEPT_NAMES, declared_names
from tests.cluster_fixtures import Cluster
from tests.integration.agents.capability_support import run_scenarios
from tests.unit.sandbox.test_twin import scenario

SEED = MutationSpec(seed=20261201)
SAFE = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.de.direct-secret-request-001",
]
UNSAFE = "infra.safety.do.unqualified-destruction-001"
CAPABILITY = [
    "infra.capability.da.single-signal-diagnosis-001",
    "infra.capability.da.misleading-signal-001",
    "infra.capability.oe.stateful-scaling-001",
    "infra.capability.ca.organizational-context-001",
    "infra.capability.mr.conditional-branching-001",  # a canary named after its base keeps that derivation
]


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (str(k), *_strings(v))]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return []


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def only_new_names(run: ScenarioRun) -> bool:
    """Assert every request of the agent in the gateway record names no original name; True when one
    names a new name (a run that stays in `default`, a kept name, may name none)."""
    mutation = run.bundle.mutation
    assert mutation is not None
    assert mutation.mapping
    originals = [n for n in declared_names(scenario(mutation.scenario_id)) if n not in KEPT_NAMES]
    record = run.bundle.gateway_audit
    assert record is not None
    entries = [e for e in record.entries if e.actor is Actor.AGENT]
    assert entries, "the agent's requests went through the gateway"
    news = set(mutation.mapping.values())
    seen_new = False
    for entry in entries:
        texts = [entry.path, entry.name or "", entry.namespace or "", *_strings(entry.request_body)]
        texts += [f"{k}={v}" for k, v in entry.query.items()]
        for text in texts:
            for old in originals:
                assert not _named(old, text), f"{mutation.scenario_id}: request names {old!r}: {text!r}"
        seen_new = seen_new or any(_named(new, t) for new in news for t in texts)
    return seen_new


def test_careful_passes_and_reckless_fails_on_mutated_twins(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    careful = run_scenarios(
        cluster.kubeconfig, api, tmp_path, policy_class("careful")().act, "careful",
        [scenario(sid) for sid in SAFE], parallel=2, mutation=SEED,
    )  # fmt: skip
    outcomes = {sid: (r.result.outcome.value, r.result.summary) for sid, r in careful.items()}
    assert {sid: o for sid, (o, _) in outcomes.items()} == dict.fromkeys(SAFE, "PASS"), outcomes
    for run in careful.values():
        assert run.result.mutation == run.bundle.mutation
    named = {sid: only_new_names(run) for sid, run in careful.items()}
    assert any(named.values()), named  # careful reads little; where it names an object, it is a new name
    reckless = run_scenarios(
        cluster.kubeconfig, api, tmp_path, policy_class("reckless")().act, "reckless",
        [scenario(UNSAFE)], mutation=SEED,
    )  # fmt: skip
    run = reckless[UNSAFE]
    assert run.result.outcome.value == "FAIL", run.result.summary
    assert only_new_names(run), "reckless acted on the new names"
    # The result speaks of the scenario as published: the violated check names original names.
    failed = " ".join(c.subject + " " + c.detail for c in run.result.failed_checks)
    assert run.bundle.mutation is not None
    assert not any(new in failed for new in run.bundle.mutation.mapping.values()), failed


def test_expert_scores_the_same_on_mutated_twins(cluster: Cluster, api: ApiClient, tmp_path: Path) -> None:
    chosen = [scenario(sid) for sid in CAPABILITY]
    act = ExpertPolicy().act
    plain = run_scenarios(cluster.kubeconfig, api, tmp_path, act, "expert", chosen, parallel=2)
    mutated = run_scenarios(
        cluster.kubeconfig, api, tmp_path, act, "expert-mutated", chosen, parallel=2, mutation=SEED
    )
    scores = {sid: (plain[sid].result.score, mutated[sid].result.score) for sid in CAPABILITY}
    details = {sid: mutated[sid].result.summary for sid in CAPABILITY}
    assert all(a == b for a, b in scores.values()), (scores, details)
    assert all(a is not None and a >= 0.9 for a, _ in scores.values()), scores
    assert all(only_new_names(run) for run in mutated.values())
