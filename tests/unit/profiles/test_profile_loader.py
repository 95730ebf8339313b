"""Loading the shipped profile and the upstream copy, and comparing their facts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from profile_support import SHIPPED

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Classification
from oasis_operator.profiles import ProfileLoadError, load_profile
from oasis_operator.profiles.loader import default_profile_path, detect_layout, shipped_profile_path

PROSE_FIELDS = {"name", "description", "intent", "x-oasis-operator"}


def test_shipped_profile_has_21_safety_and_29_capability_scenarios(shipped: Profile) -> None:
    counts = Counter(scenario.classification for scenario in shipped.scenarios)
    assert counts == {Classification.SAFETY: 21, Classification.CAPABILITY: 29}


def test_safety_has_seven_categories_of_three_archetypes(shipped: Profile) -> None:
    per_category = Counter(s.category for s in shipped.scenarios if s.classification is Classification.SAFETY)
    assert len(per_category) == 7
    assert set(per_category.values()) == {3}


def test_capability_categories_have_four_or_five_archetypes(shipped: Profile) -> None:
    sizes = {category.id: len(category.archetypes) for category in shipped.capability_categories}
    assert sizes["auditability"] == 5
    assert sorted(sizes.values()) == [4, 4, 4, 4, 4, 4, 5]


def test_metadata_versions(shipped: Profile) -> None:
    assert shipped.identifier == "oasis-profile-software-infrastructure"
    assert shipped.version == "0.2.0-rc3"
    assert shipped.core_dependency == ">=1.0.0-rc1.5"
    assert shipped.layout == "operator"


def test_layouts_are_detected(upstream: Profile) -> None:
    assert detect_layout(SHIPPED) == "operator"
    assert upstream.layout == "upstream"


def test_upstream_gives_same_ids_categories_and_assertions(shipped: Profile, upstream: Profile) -> None:
    ours = {s.id: s for s in shipped.scenarios}
    theirs = {s.id: s for s in upstream.scenarios}
    assert set(ours) == set(theirs)
    assert len(ours) == 50
    for scenario_id, scenario in theirs.items():
        mine = ours[scenario_id]
        assert (mine.classification, mine.category, mine.archetype) == (
            scenario.classification,
            scenario.category,
            scenario.archetype,
        )
        assert mine.assertions == scenario.assertions, scenario_id


def test_every_fact_carries_over_exactly(shipped: Profile, upstream: Profile) -> None:
    theirs = {s.id: s.model_dump(by_alias=True) for s in upstream.scenarios}
    for scenario in shipped.scenarios:
        mine = scenario.model_dump(by_alias=True)
        for key, value in theirs[scenario.id].items():
            if key not in PROSE_FIELDS:
                assert mine[key] == value, f"{scenario.id}.{key}"


def test_prose_is_rewritten_not_copied(shipped: Profile, upstream: Profile) -> None:
    theirs = {s.id: s for s in upstream.scenarios}
    for scenario in shipped.scenarios:
        original = theirs[scenario.id]
        assert scenario.name != original.name, scenario.id
        assert scenario.description.split() != original.description.split(), scenario.id
        if original.intent is not None:
            assert scenario.intent is not None
            assert scenario.intent.split() != original.intent.split(), scenario.id


def test_profile_facts_match_upstream(shipped: Profile, upstream: Profile) -> None:
    def taxonomy(profile: Profile) -> list[tuple[str, str, list[str], list[str]]]:
        return [
            (
                c.id,
                c.code,
                getattr(c, "core_mapping", getattr(c, "dimensions", [])),
                [a.id for a in c.archetypes],
            )
            for c in profile.all_categories()
        ]

    assert taxonomy(shipped) == taxonomy(upstream)
    assert [(c.id, c.aggregation) for c in shipped.capability_categories] == [
        (c.id, c.aggregation) for c in upstream.capability_categories
    ]
    assert shipped.core_dimension_weights == upstream.core_dimension_weights
    assert [(s.id, s.parents) for s in shipped.subcategories] == [
        (s.id, s.parents) for s in upstream.subcategories
    ]
    assert [(t.tier, t.coverage, t.adversarial_variants_required) for t in shipped.tiers] == [
        (t.tier, t.coverage, t.adversarial_variants_required) for t in upstream.tiers
    ]
    assert shipped.intent_promotion == upstream.intent_promotion
    assert shipped.interface_types == upstream.interface_types
    assert set(upstream.resource_types) <= set(shipped.resource_types)


def test_weights_from_the_profile_tables(shipped: Profile) -> None:
    weights = {c.id: c.aggregation.weights for c in shipped.capability_categories}
    assert weights["diagnostic-accuracy"] == {"C-DA-002": 1.5, "C-DA-004": 1.5}
    assert weights["auditability"] == {"C-AU-005": 2.0}
    assert shipped.core_dimension_weights["reasoning"]["contextual-awareness"] == 0.25


def test_conformance_and_stimuli_match_upstream(shipped: Profile, upstream: Profile) -> None:
    assert shipped.conformance is not None
    assert upstream.conformance is not None
    assert set(shipped.conformance.requirements) == set(upstream.conformance.requirements)
    assert "value_containment_support" in shipped.conformance.requirements
    for key, requirement in upstream.conformance.requirements.items():
        assert shipped.conformance.requirements[key].expected == requirement.expected
        assert shipped.conformance.requirements[key].type == requirement.type
    assert [s.id for s in shipped.stimulus_library] == [s.id for s in upstream.stimulus_library]
    theirs = {s.id: s for s in upstream.stimulus_library}
    for stimulus in shipped.stimulus_library:
        assert stimulus.type == theirs[stimulus.id].type
        if theirs[stimulus.id].value is not None:
            assert stimulus.value == theirs[stimulus.id].value


def test_agent_configuration_dimensions(shipped: Profile) -> None:
    dims = {d.identifier: d for d in shipped.agent_configuration}
    assert dims["operational_mode"].values == ["read_only", "read_write"]
    assert dims["operational_mode"].default == "read_write"
    assert dims["zone_model"].type == "boolean"
    assert dims["zone_model"].default is None
    assert dims["interface_type"].default == "cli"


def test_default_profile_path_is_the_shipped_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OASIS_PROFILE_DIR", raising=False)
    assert default_profile_path() == SHIPPED


def test_default_profile_path_follows_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_profile_path(tmp_path) == tmp_path
    # The variable is the operator's setting; the loader itself never reads the environment.
    monkeypatch.setenv("OASIS_PROFILE_DIR", str(tmp_path))
    assert default_profile_path() != tmp_path
    assert shipped_profile_path() == tmp_path


def test_not_a_profile_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(ProfileLoadError, match="not a profile directory"):
        load_profile(tmp_path)


def test_malformed_scenario_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "profile.yaml").write_text(
        (SHIPPED / "profile.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    scenarios = tmp_path / "scenarios" / "safety"
    scenarios.mkdir(parents=True)
    (scenarios / "x.yaml").write_text("---\nid: infra.safety.be.x-001\n", encoding="utf-8")
    with pytest.raises(ProfileLoadError, match=r"x\.yaml#0: not a valid scenario: name: Field required"):
        load_profile(tmp_path)
