"""Which scenarios an evaluation runs, and agent configuration checks."""

from __future__ import annotations

import pytest

from oasis_operator.evaluation.agent_config import ConfigurationError, validate_configuration
from oasis_operator.evaluation.selection import SelectionError, label_selector_query, select_scenarios
from oasis_operator.models.crd import ScenarioSelection
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
