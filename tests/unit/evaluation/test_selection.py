"""Which scenarios an evaluation runs, and agent configuration checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from oasis_operator.agents.adapters import MAX_IDENTITY
from oasis_operator.evaluation.agent_config import ConfigurationError, validate_configuration
from oasis_operator.evaluation.bounds import MAX_EVIDENCE_BYTES
from oasis_operator.evaluation.selection import (
    SelectionError,
    check_scenario_runs,
    label_selector_query,
    select_scenarios,
)
from oasis_operator.models.crd import MAX_REPETITIONS, MAX_SCENARIO_RUNS, ScenarioSelection
from oasis_operator.models.profile import Profile
from oasis_operator.profiles import default_profile_path, load_profile


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(default_profile_path())


def test_whole_profile_safety_first_then_capability_sorted(profile: Profile) -> None:
    chosen = select_scenarios(ScenarioSelection(), profile.scenarios)
    assert len(chosen) == 50
    classes = [s.classification.value for s in chosen]
    assert classes == ["safety"] * 21 + ["capability"] * 29
    assert [s.id for s in chosen[:21]] == sorted(s.id for s in chosen[:21])


def test_filters_combine(profile: Profile) -> None:
    selection = ScenarioSelection(
        ids=["infra.safety.*", "infra.capability.da.*"], categories=["diagnostic-accuracy"]
    )
    chosen = select_scenarios(selection, profile.scenarios)
    assert {s.category for s in chosen} == {"diagnostic-accuracy"}
    assert len(chosen) == 4
    only_safety = select_scenarios(ScenarioSelection(classifications=["safety"]), profile.scenarios)
    assert len(only_safety) == 21


def test_empty_selection_names_the_field(profile: Profile) -> None:
    with pytest.raises(SelectionError, match=r"spec\.scenarios: the selection matches no scenario"):
        select_scenarios(ScenarioSelection(ids=["nope.*"]), profile.scenarios)


def test_custom_scenario_with_a_builtin_id_is_refused(profile: Profile) -> None:
    with pytest.raises(SelectionError, match="selected twice"):
        select_scenarios(ScenarioSelection(), profile.scenarios, [profile.scenarios[0]])
    custom_only = select_scenarios(ScenarioSelection(builtin=False), [], [profile.scenarios[0]])
    assert [s.id for s in custom_only] == [profile.scenarios[0].id]


def test_label_selector_query() -> None:
    query = label_selector_query(
        {"suite": "nightly", "team": "a"},
        [
            ("tier", "In", ["1", "2"]),
            ("skip", "DoesNotExist", []),
            ("env", "NotIn", ["prod"]),
            ("x", "Exists", []),
        ],
    )
    assert query == "suite=nightly,team=a,tier in (1,2),!skip,env notin (prod),x"


def test_configuration_defaults_and_errors(profile: Profile) -> None:
    effective = validate_configuration(profile, {"zone_model": True})
    assert effective == {"operational_mode": "read_write", "interface_type": "cli", "zone_model": True}
    with pytest.raises(ConfigurationError, match=r"configuration\.operational_mode: must be one of"):
        validate_configuration(profile, {"operational_mode": "admin"})
    with pytest.raises(ConfigurationError, match=r"configuration\.zone_model: must be true or false"):
        validate_configuration(profile, {"zone_model": "yes"})
    with pytest.raises(ConfigurationError, match=r"configuration\.colour: not a dimension"):
        validate_configuration(profile, {"colour": "blue"})


def test_the_whole_profile_at_most_repetitions_is_within_the_scenario_run_bound(profile: Profile) -> None:
    check_scenario_runs(len(profile.scenarios), MAX_REPETITIONS)
    assert len(profile.scenarios) * MAX_REPETITIONS <= MAX_SCENARIO_RUNS


def test_more_scenario_runs_than_an_evaluation_keeps_are_refused_naming_the_fields() -> None:
    check_scenario_runs(MAX_SCENARIO_RUNS, 1)
    with pytest.raises(SelectionError) as refused:
        check_scenario_runs(101, 10)
    assert str(refused.value).startswith(
        "spec.scenarios, spec.repetitions: 101 scenarios x 10 repetitions are 1010 scenario runs; "
        f"an evaluation keeps the evidence of at most {MAX_SCENARIO_RUNS}"
    )


def test_the_etcd_bound_docs_state_is_the_one_the_code_enforces() -> None:
    """docs/install.md §8 states the bounds the code enforces: the per-run bundle, the identity document
    and the scenario runs of one evaluation."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "install.md").read_text(encoding="utf-8")
    assert f"{MAX_EVIDENCE_BYTES // 1024**2} MiB (`MAX_EVIDENCE_BYTES`" in doc
    assert f"{MAX_IDENTITY // 1024**2} MiB (`MAX_IDENTITY`" in doc
    assert f"at most {MAX_SCENARIO_RUNS} scenario runs (`MAX_SCENARIO_RUNS`)" in doc
    assert f"`spec.repetitions` (at most {MAX_REPETITIONS})" in doc
