"""The OASIS verdict document (Reporting §1), field for field, and the wrapper report (§2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator import OASIS_CORE_VERSION
from oasis_operator.models.agent_failure import AgentFailureSource
from oasis_operator.models.agent_identity import AgentDeclaration, AgentModels
from oasis_operator.models.mutation import MutationConfig
from oasis_operator.models.repetitions import RepetitionsSummary
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult, Status
from oasis_operator.models.scenario import ConditionValue
from oasis_operator.models.timings import PhaseTimings


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Failure(_Model):
    scenario_id: str
    description: str


class ProviderFailureEntry(_Model):
    scenario_id: str
    cause: str


class UnevaluatedEntry(_Model):
    """An UNEVALUABLE scenario: an agent failure took it out of scoring (counted in no score)."""

    scenario_id: str
    cause: str
    source: AgentFailureSource = AgentFailureSource.AGENT


class AgentFailureEntry(_Model):
    """One scenario that carries an agent failure, with the status it ended with (UNEVALUABLE or FAIL)."""

    scenario_id: str
    cause: str
    source: AgentFailureSource
    status: ScenarioOutcome


class AgentFailures(_Model):
    """Every agent failure of the run; always present, `count: 0` included. Any failure means the run
    makes no conformance claim."""

    count: int = Field(ge=0)
    scenarios: list[AgentFailureEntry] = Field(default_factory=list)


class Comparability(_Model):
    """Whether a group's result may be compared with another run's: how many of its scenarios were
    scored (judged: PASS, FAIL or SCORED), how many an agent failure made UNEVALUABLE (any one makes
    the group not comparable). Groups list these fields after their own (the document reads in order)."""

    comparable: bool = True
    scenarios_scored: int = Field(default=0, ge=0)
    unevaluable: int = Field(default=0, ge=0)


class ArchetypeScore(_Model):
    """One archetype of a capability category: its mean score (None when nothing was scored)."""

    score: float | None
    comparable: bool
    scenarios_scored: int = Field(ge=0)
    unevaluable: int = Field(ge=0)


class SubcategoryCounts(_Model):
    total: int
    passed: int
    failed: int
    provider_failure: int


class HumanReviewEntry(_Model):
    """A tolerance-adjusted PASS listed for a sanity check; not a verdict status."""

    scenario_id: str
    tolerance: str = Field(description="Percent, e.g. '10%'.")
    measured_deviation: str
    result: Status = Status.PASS


class SafetyDetails(_Model):
    total_scenarios: int
    applicable: int
    not_applicable: int
    passed: int
    failed: int
    provider_failure: int
    unevaluable: int = Field(
        default=0, ge=0, description="Applicable scenarios an agent failure took out of scoring."
    )
    tolerance_adjusted: int
    failures: list[Failure]
    provider_failures: list[ProviderFailureEntry]
    unevaluable_scenarios: list[UnevaluatedEntry] = Field(default_factory=list)
    subcategory_results: dict[str, dict[str, SubcategoryCounts]] | None = None
    human_review: list[HumanReviewEntry]


class Coverage(_Model):
    required_archetypes: int
    evaluated_archetypes: int
    complete: bool
    comparable: bool = Field(default=True, description="False when a capability scenario was UNEVALUABLE.")
    scenarios_scored: int = Field(default=0, ge=0)
    unevaluable: int = Field(default=0, ge=0)


class DomainCategoryScore(_Model):
    score: float
    archetypes_evaluated: int
    maps_to_dimensions: list[str]
    comparable: bool = True
    scenarios_scored: int = Field(default=0, ge=0)
    unevaluable: int = Field(default=0, ge=0)
    archetypes: dict[str, ArchetypeScore] = Field(
        default_factory=dict, description="Each archetype of the category with a scenario that ran."
    )


class CapabilityBlock(_Model):
    tier: int
    coverage: Coverage
    domain_categories: dict[str, DomainCategoryScore]
    core_dimensions: dict[str, float]


class EnvironmentMeta(_Model):
    provider: str
    provider_version: str
    tier: int
    tier_evidence: str
    conformance_check: str


class ScenarioCount(_Model):
    safety: int
    capability: int


class ConfigurationCoverage(_Model):
    total_scenarios: int
    applicable: int
    not_applicable: int
    not_applicable_by_category: dict[str, int]
    warnings: list[str]


class MutationGenerator(_Model):
    """How the run's names were mutated, in the shape of the generator block (Adversarial §3, §6.1)."""

    type: Literal["mutation"] = "mutation"
    reproducibility: Literal["deterministic"] = "deterministic"
    base_scenario_set: str = Field(description="The scenarios mutated: the profile and its version.")
    mutation_strategy: str
    seed: int
    config_hash: str = Field(description="sha256 of the generator's configuration (strategy, seed, set).")


class NameMutationRecord(_Model):
    """The name mutation the core evaluation itself ran with (this project's block, not the spec's
    `adversarial_verification`: no probes ran beside the core evaluation; its own scenarios were mutated)."""

    generator: MutationGenerator
    applies_to: Literal["core_evaluation"] = "core_evaluation"
    scenarios: dict[str, str] = Field(
        description="Scenario id → digest of its name mapping; the mapping is on the report's scenario "
        "result (`mutation`) and in the scenario's evidence bundle."
    )


class VerdictMetadata(_Model):
    agent: str
    agent_version: str
    agent_configuration: dict[str, ConditionValue]
    agent_declaration: AgentDeclaration = Field(
        default_factory=AgentDeclaration,
        description="What the agent declared about its build, configuration and model (all kept).",
    )
    agent_models: AgentModels = Field(
        description="Declared and observed models, and whether the run is heterogeneous."
    )
    domain_profile: str
    domain_profile_version: str
    oasis_core_version: str
    environment: EnvironmentMeta
    evaluator: str
    timestamp: str
    scenario_count: ScenarioCount
    duration: str
    configuration_coverage: ConfigurationCoverage
    aborted: bool
    abort_reason: str | None = None
    agent_failures: AgentFailures = Field(default_factory=lambda: AgentFailures(count=0))
    name_mutation: NameMutationRecord | None = None
    repetitions: RepetitionsSummary | None = Field(
        default=None, description="spec.repetitions > 1: runs per scenario, flaky scenarios, pass^k, pass@k."
    )


class Verdict(_Model):
    """The `verdict:` object of Reporting §1 (adversarial_verification is never produced here)."""

    safety: Status
    safety_details: SafetyDetails
    capability: CapabilityBlock | None = None
    metadata: VerdictMetadata
    adversarial_verification: dict[str, Any] | None = None

    def document(self) -> dict[str, Any]:
        """The verdict as the `{verdict: ...}` document, optional absent blocks left out."""
        body = self.model_dump(mode="json", exclude_none=False)
        for key in ("capability", "adversarial_verification"):
            if body.get(key) is None:
                body.pop(key, None)
        details = body["safety_details"]
        if details.get("subcategory_results") is None:
            details.pop("subcategory_results", None)
        for key in ("abort_reason", "name_mutation", "repetitions"):
            if body["metadata"].get(key) is None:
                body["metadata"].pop(key, None)
        return {"verdict": body}


class CategoryResult(_Model):
    """Per-category safety result for the report (§2.3)."""

    category: str
    result: Status | None = Field(
        description="None when every scenario was NOT_APPLICABLE; NOT_EVALUATED when none was evaluated."
    )
    applicable: int
    not_applicable: int
    passed: int
    failed: int
    provider_failure: int
    comparable: bool = True
    scenarios_scored: int = Field(default=0, ge=0)
    unevaluable: int = Field(default=0, ge=0)


class CapabilityCategoryDetail(_Model):
    """Per-category capability breakdown for the report (§2.4)."""

    category: str
    score: float | None
    method: str
    archetype_scores: dict[str, float]
    archetype_weights: dict[str, float]
    maps_to_dimensions: list[str]
    comparable: bool = True
    scenarios_scored: int = Field(default=0, ge=0)
    unevaluable: int = Field(default=0, ge=0)
    archetypes: dict[str, ArchetypeScore] = Field(default_factory=dict)


class DimensionDetail(_Model):
    dimension: str
    score: float | None
    contributions: dict[str, float] = Field(description="Category → weight used.")


class CoverageRow(_Model):
    """One category's row of the coverage matrix (§2.5)."""

    category: str
    classification: str
    required: int
    archetypes_defined: list[str]
    archetypes_evaluated: list[str]
    archetypes_skipped: dict[str, str] = Field(description="Archetype → why it was not evaluated.")
    met: bool
    not_applicable: int
    not_applicable_conditions: list[str]


class Report(_Model):
    """The evaluation report (Reporting §2): the verdict plus every section's detail."""

    title: str
    incomplete: bool
    implementation: dict[str, str]
    environment_description: dict[str, Any]
    verdict: Verdict
    safety_categories: list[CategoryResult]
    subcategories: dict[str, dict[str, SubcategoryCounts]]
    capability_categories: list[CapabilityCategoryDetail]
    core_dimensions: list[DimensionDetail]
    coverage_matrix: list[CoverageRow]
    scenarios: list[ScenarioResult]
    unevaluated: list[UnevaluatedEntry] = Field(
        default_factory=list,
        description="UNEVALUABLE scenarios with their causes; the run makes no conformance claim.",
    )
    statements: dict[str, str]
    decisions: list[str] = Field(default_factory=list, description="Evaluation rules this engine applied.")
    timings: dict[str, PhaseTimings] = Field(
        default_factory=dict, description="Wall seconds per phase of each scenario that ran, by scenario id."
    )


class RunInfo(_Model):
    """Facts about the run that the engine cannot know itself (all supplied by the runner)."""

    agent: str
    agent_version: str
    agent_configuration: dict[str, ConditionValue] = Field(default_factory=dict)
    evaluator: str
    timestamp: str = Field(description="ISO 8601 start of the evaluation, from the runner.")
    duration: str = Field(description="Total evaluation time, e.g. '312s'.")
    tier: int = Field(ge=1, le=3)
    environment: EnvironmentMeta
    oasis_core_version: str = OASIS_CORE_VERSION
    implementation: str = "oasis-operator"
    implementation_version: str = "0.1.0"
    environment_characteristics: list[str] = Field(default_factory=list)
    lab_framework: str | None = None
    aborted: bool = False
    abort_reason: str | None = None
    timings: dict[str, PhaseTimings] = Field(
        default_factory=dict, description="Phase timings by scenario id (the report shows them; no verdict)."
    )
    mutation: MutationConfig | None = Field(
        default=None, description="The name mutation every scenario ran with (`spec.mutation`)."
    )
    agent_declaration: AgentDeclaration = Field(
        default_factory=AgentDeclaration,
        description="What the agent's identity declared besides its name and version.",
    )
