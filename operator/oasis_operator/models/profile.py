"""A domain profile (Profiles spec §2) as pydantic models, plus the validator's `Finding`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.behaviors import BehaviorRegistry
from oasis_operator.models.scenario import Classification, Scenario


class _Model(BaseModel):
    """Profile documents: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Severity(StrEnum):
    """How much a finding matters: errors make a scenario or profile non-conformant."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Finding(_Model):
    """One validator result: what is wrong, where, and under which stable rule id."""

    severity: Severity
    rule: str = Field(pattern=r"^[A-Z]+(-[A-Z0-9]+)+$", description="Stable rule id, e.g. SCN-ID-CONVENTION.")
    scenario: str | None = Field(default=None, description="The scenario the finding is about.")
    path: str = Field(default="", description="Where in the document, e.g. stimuli[0].timing.")
    message: str = Field(description="What is wrong and how to fix it.")


class Archetype(_Model):
    """One archetype of a category (e.g. S-BE-001)."""

    id: str = Field(pattern=r"^[SC]-[A-Z]{2}-\d{3}$")
    name: str
    description: str


class SafetyCategory(_Model):
    """A safety category of the profile and its mapping to core safety categories (Profiles §2.4)."""

    id: str = Field(description="Slug used in scenario `category`, e.g. boundary-enforcement.")
    code: str = Field(pattern=r"^[a-z]{2}$", description="Two-letter code used in scenario ids.")
    name: str
    core_mapping: list[str] = Field(description="Core safety categories; empty when domain-specific.")
    justification: str | None = Field(default=None, description="Why a domain-specific category is needed.")
    question: str
    archetypes: list[Archetype]


class AggregationMethod(StrEnum):
    """How archetype scores combine into a category score."""

    WEIGHTED_AVERAGE = "weighted_average"
    MINIMUM = "minimum"


class Aggregation(_Model):
    """How archetype scores roll up to a category score (profile §6)."""

    method: AggregationMethod
    weights: dict[str, float] = Field(
        default_factory=dict, description="Archetype id → weight; archetypes not listed weigh 1.0."
    )


class CapabilityCategory(_Model):
    """A capability category, the core dimensions it feeds and how it aggregates (Profiles §2.5)."""

    id: str
    code: str = Field(pattern=r"^[a-z]{2}$")
    name: str
    dimensions: list[str] = Field(min_length=1, description="Core capability dimensions it feeds.")
    question: str
    aggregation: Aggregation
    archetypes: list[Archetype]


class Subcategory(_Model):
    """A subcategory and the categories it belongs to (Profiles §2.14)."""

    id: str
    parents: list[str] = Field(min_length=1, description="Category ids this subcategory belongs to.")
    description: str


class CoverageRule(_Model):
    """Minimum archetypes per category at a tier: a number, or `all`."""

    safety: int | Literal["all"]
    capability: int | Literal["all"]


class TierRequirement(_Model):
    """Environment and minimum coverage of one complexity tier (Profiles §2.7)."""

    tier: int = Field(ge=1, le=3)
    name: str
    environment: list[str]
    coverage: CoverageRule
    required_archetypes: list[str] = Field(default_factory=list)
    adversarial_variants_required: bool = False


class ConfigDimension(_Model):
    """One agent configuration dimension (Profiles §2.16)."""

    identifier: str
    type: Literal["enum", "boolean"]
    values: list[str] = Field(default_factory=list)
    description: str
    default: str | bool | None = None


class ConformanceRequirement(_Model):
    """One key of the provider conformance contract (Profiles §2.17)."""

    type: str
    required: bool
    expected: Any
    description: str


class ConformanceContract(_Model):
    """The provider conformance contract a provider must satisfy at preflight."""

    profile: str
    profile_version: str
    oasis_core_dependency: str
    requirements: dict[str, ConformanceRequirement]


class StimulusTemplate(_Model):
    """A reusable stimulus of the profile library (Profiles §2.10)."""

    id: str = Field(pattern=r"^STIM-[A-Z]+-\d{3}$")
    name: str
    type: str
    value: str | None = None
    description: str | None = None
    target: str | None = None
    timing: str | None = None
    parameters: list[str] = Field(default_factory=list)
    usage: str


class IntentPromotion(_Model):
    """Which classifications require or recommend an intent (Profiles §2.15)."""

    required_for: list[Classification] = Field(default_factory=list)
    recommended_for: list[Classification] = Field(default_factory=list)


class Profile(_Model):
    """Everything the validator and the engine need to know about a profile."""

    identifier: str = Field(description="e.g. oasis-profile-software-infrastructure")
    name: str = Field(description="Short name used in Scenario resources, e.g. software-infrastructure.")
    title: str
    version: str
    core_dependency: str = Field(description="Version constraint on the core spec, e.g. >=1.0.0-rc1.5.")
    description: str = ""
    layout: Literal["operator", "upstream"] = "operator"
    interface_types: list[str] = Field(default_factory=list)
    resource_types: list[str] = Field(default_factory=list)
    output_channels: list[str] = Field(default_factory=list)
    safety_categories: list[SafetyCategory] = Field(default_factory=list)
    capability_categories: list[CapabilityCategory] = Field(default_factory=list)
    subcategories: list[Subcategory] = Field(default_factory=list)
    core_dimension_weights: dict[str, dict[str, float]] = Field(default_factory=dict)
    tiers: list[TierRequirement] = Field(default_factory=list)
    intent_promotion: IntentPromotion = Field(default_factory=IntentPromotion)
    agent_configuration: list[ConfigDimension] = Field(default_factory=list)
    conformance: ConformanceContract | None = None
    stimulus_library: list[StimulusTemplate] = Field(default_factory=list)
    behaviors: BehaviorRegistry = Field(default_factory=BehaviorRegistry)
    scenarios: list[Scenario] = Field(default_factory=list)

    def all_categories(self) -> list[SafetyCategory | CapabilityCategory]:
        """Safety categories then capability categories."""
        return [*self.safety_categories, *self.capability_categories]

    def category_ids(self, classification: Classification) -> set[str]:
        """Category slugs of one classification."""
        if classification is Classification.SAFETY:
            return {category.id for category in self.safety_categories}
        return {category.id for category in self.capability_categories}

    def archetypes_of(self, category_id: str) -> set[str]:
        """Archetype ids defined for a category (empty when the category is unknown)."""
        for category in self.all_categories():
            if category.id == category_id:
                return {archetype.id for archetype in category.archetypes}
        return set()

    def category_code(self, category_id: str) -> str | None:
        """Two-letter code of a category, or None when unknown."""
        for category in self.all_categories():
            if category.id == category_id:
                return category.code
        return None

    def scenario(self, scenario_id: str) -> Scenario | None:
        """The scenario with this id, or None."""
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        return None
