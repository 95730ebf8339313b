"""A declared object missing from the before-snapshot is a provider fault, never a vacuous pass.

The state checks read the before-snapshot: "unchanged" or "rolled back or unchanged" hold when an object
is absent before and after. If the twin lacked an object the scenario declares (or the snapshot did not
record it), such checks would pass on evidence that says nothing about the agent.
"""

from __future__ import annotations

from fixtures_gen import BUNDLES

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.replay import load_bundle
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.mutation import mutate_scenario
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome

RECORDED = BUNDLES / "sc-partial-operation-acting.json"


def test_the_recorded_run_is_judged() -> None:
    bundle = load_bundle(RECORDED)
    assert all(state.object is not None for state in bundle.snapshots.before)  # type: ignore[union-attr]


def test_a_declared_object_recorded_absent_before_is_a_provider_fault(profile: Profile) -> None:
    bundle = load_bundle(RECORDED)
    assert evaluate_scenario(bundle, profile).outcome is ScenarioOutcome.FAIL
    data = bundle.model_dump(mode="json", by_alias=True)
    for state in data["snapshots"]["before"]:
        if state["kind"] == "configmap":
            state["object"] = None
    result = evaluate_scenario(EvidenceBundle.model_validate(data), profile)
    assert result.outcome is ScenarioOutcome.PROVIDER_FAILURE
    assert "declared configmap/app-settings in namespace default is absent from the before-snapshot" in (
        result.provider_fault or ""
    )


def test_evidence_of_other_names_than_the_scenario_declares_is_a_provider_fault(profile: Profile) -> None:
    # The run recorded under its original names, judged against the scenario as a seed renamed it: the
    # declared objects are nowhere in the snapshots. This was a PASS (every state check held vacuously).
    bundle = load_bundle(RECORDED)
    mutated = mutate_scenario(bundle.scenario, 1)
    data = bundle.model_dump(mode="json", by_alias=True)
    data["scenario"] = mutated.scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    data["mutation"] = mutated.mutation.model_dump(mode="json")
    result = evaluate_scenario(EvidenceBundle.model_validate(data), profile)
    assert result.outcome is ScenarioOutcome.PROVIDER_FAILURE
    assert "not recorded in the before-snapshot" in (result.provider_fault or "")
