"""Profile quality metrics (Profiles §3, §4.1): a report for human review, never a score."""

from __future__ import annotations

from collections import Counter, defaultdict

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Classification

LEVELS = ("low", "medium", "high")
AXES = ("plausibility", "detection_complexity", "contextual_embedding")


class _Report(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AxisDistribution(_Report):
    counts: dict[str, int]
    percent: dict[str, float]
    unrated: int
    missing_levels: list[str]


class CategorySurfaces(_Report):
    category: str
    scenarios: int
    distinct_surfaces: int
    shared_surfaces: dict[str, list[str]] = Field(description="Surface → scenarios sharing it (redundant).")
    unlabelled: list[str]


class NegativeTesting(_Report):
    safety_archetypes: int
    with_companion: int
    ratio: float
    missing: list[str]
    companions: dict[str, list[str]]


class IntentCoverage(_Report):
    with_intent: int
    total: int
    missing_required: list[str]
    too_short: list[str]
    duplicated: list[str]


class QualityReport(_Report):
    """Difficulty spread, attack-surface independence, negative testing, intents, subcategories, tiers."""

    profile: str
    version: str
    difficulty: dict[str, AxisDistribution]
    attack_surfaces: list[CategorySurfaces]
    negative_testing: NegativeTesting
    intent: IntentCoverage
    subcategory_use: dict[str, int]
    unused_subcategories: list[str]
    archetypes_by_tier: dict[int, list[str]] = Field(
        description="Archetypes with a scenario runnable at tier."
    )
    archetypes_without_scenarios: list[str]


def _difficulty(profile: Profile) -> dict[str, AxisDistribution]:
    safety = [s for s in profile.scenarios if s.classification is Classification.SAFETY]
    result: dict[str, AxisDistribution] = {}
    for axis in AXES:
        counts = dict.fromkeys(LEVELS, 0)
        unrated = 0
        for scenario in safety:
            difficulty = scenario.quality.difficulty if scenario.quality else None
            if difficulty is None:
                unrated += 1
            else:
                counts[getattr(difficulty, axis)] += 1
        rated = sum(counts.values())
        percent = {level: round(100 * n / rated, 1) if rated else 0.0 for level, n in counts.items()}
        missing = [level for level, n in counts.items() if n == 0]
        result[axis] = AxisDistribution(
            counts=counts, percent=percent, unrated=unrated, missing_levels=missing
        )
    return result


def _surfaces(profile: Profile) -> list[CategorySurfaces]:
    report = []
    for category in profile.safety_categories:
        scenarios = [s for s in profile.scenarios if s.category == category.id]
        by_surface: dict[str, list[str]] = defaultdict(list)
        unlabelled = []
        for scenario in scenarios:
            surface = scenario.quality.attack_surface if scenario.quality else None
            if surface is None:
                unlabelled.append(scenario.id)
            else:
                by_surface[surface].append(scenario.id)
        shared = {surface: ids for surface, ids in sorted(by_surface.items()) if len(ids) > 1}
        report.append(
            CategorySurfaces(
                category=category.id,
                scenarios=len(scenarios),
                distinct_surfaces=len(by_surface),
                shared_surfaces=shared,
                unlabelled=unlabelled,
            )
        )
    return report


def _negative_testing(profile: Profile) -> NegativeTesting:
    archetypes = [a.id for c in profile.safety_categories for a in c.archetypes]
    companions: dict[str, list[str]] = defaultdict(list)
    for scenario in profile.scenarios:
        companion = scenario.quality.companion_scenario if scenario.quality else None
        if scenario.classification is Classification.SAFETY and companion:
            target = profile.scenario(companion)
            if target is not None and target.classification is Classification.CAPABILITY:
                companions[scenario.archetype].append(companion)
    missing = [a for a in archetypes if a not in companions]
    with_companion = len(archetypes) - len(missing)
    return NegativeTesting(
        safety_archetypes=len(archetypes),
        with_companion=with_companion,
        ratio=round(with_companion / len(archetypes), 3) if archetypes else 0.0,
        missing=missing,
        companions={k: sorted(set(v)) for k, v in sorted(companions.items())},
    )


def _intent(profile: Profile) -> IntentCoverage:
    intents = Counter(s.intent.strip() for s in profile.scenarios if s.intent)
    required = profile.intent_promotion.required_for
    return IntentCoverage(
        with_intent=sum(1 for s in profile.scenarios if s.intent),
        total=len(profile.scenarios),
        missing_required=[s.id for s in profile.scenarios if not s.intent and s.classification in required],
        too_short=[s.id for s in profile.scenarios if s.intent and len(s.intent.strip()) < 20],
        duplicated=[s.id for s in profile.scenarios if s.intent and intents[s.intent.strip()] > 1],
    )


def quality_report(profile: Profile) -> QualityReport:
    """Compute the quality report of a loaded profile."""
    subcategory_use = Counter(s.subcategory for s in profile.scenarios if s.subcategory)
    all_archetypes = [(c.id, a.id) for c in profile.all_categories() for a in c.archetypes]
    by_tier = {tier: sorted({s.archetype for s in profile.scenarios if s.tier <= tier}) for tier in (1, 2, 3)}
    covered = {(s.category, s.archetype) for s in profile.scenarios}
    return QualityReport(
        profile=profile.identifier,
        version=profile.version,
        difficulty=_difficulty(profile),
        attack_surfaces=_surfaces(profile),
        negative_testing=_negative_testing(profile),
        intent=_intent(profile),
        subcategory_use=dict(sorted(subcategory_use.items())),
        unused_subcategories=[sub.id for sub in profile.subcategories if sub.id not in subcategory_use],
        archetypes_by_tier=by_tier,
        archetypes_without_scenarios=[a for c, a in all_archetypes if (c, a) not in covered],
    )
