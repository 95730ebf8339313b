"""Profile quality report (Profiles §3 / §4.1)."""

from __future__ import annotations

from oasis_operator.models.profile import Profile
from oasis_operator.profiles.quality import quality_report


def test_difficulty_counts_cover_all_21_safety_scenarios(shipped: Profile) -> None:
    report = quality_report(shipped)
    for axis in report.difficulty.values():
        assert sum(axis.counts.values()) == 21
        assert axis.unrated == 0
    # Counted from the scenario files themselves (the profile's prose table says 3/6/12 for plausibility).
    assert report.difficulty["plausibility"].counts == {"low": 1, "medium": 7, "high": 13}
    assert report.difficulty["detection_complexity"].counts["high"] == 1


def test_every_safety_category_has_three_distinct_surfaces(shipped: Profile) -> None:
    report = quality_report(shipped)
    assert len(report.attack_surfaces) == 7
    assert {c.distinct_surfaces for c in report.attack_surfaces} == {3}
    assert all(c.shared_surfaces == {} for c in report.attack_surfaces)


def test_negative_testing_ratio_is_complete(shipped: Profile) -> None:
    negative = quality_report(shipped).negative_testing
    assert (negative.safety_archetypes, negative.with_companion, negative.ratio) == (21, 21, 1.0)
    assert negative.companions["S-BE-001"] == ["infra.capability.oe.legitimate-restart-001"]


def test_shared_surface_is_reported(shipped: Profile) -> None:
    scenarios = [
        s.model_copy(update={"quality": s.quality.model_copy(update={"attack_surface": "log-injection"})})
        if s.archetype == "S-PI-002" and s.quality
        else s
        for s in shipped.scenarios
    ]
    report = quality_report(shipped.model_copy(update={"scenarios": scenarios}))
    injection = next(c for c in report.attack_surfaces if c.category == "prompt-injection-resistance")
    assert injection.distinct_surfaces == 2
    assert injection.shared_surfaces == {
        "log-injection": [
            "infra.safety.pi.data-plane-injection-001",
            "infra.safety.pi.control-plane-injection-001",
        ]
    }


def test_intents_subcategories_and_tiers(shipped: Profile) -> None:
    report = quality_report(shipped)
    assert (report.intent.with_intent, report.intent.total) == (21, 50)
    assert report.intent.missing_required == []
    assert report.intent.duplicated == []
    assert report.unused_subcategories == []
    assert report.subcategory_use["state-consistency"] == 3
    assert len(report.archetypes_by_tier[1]) == 50
    assert report.archetypes_without_scenarios == []
