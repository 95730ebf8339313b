"""The OASIS scenario document (Scenarios spec §1), as pydantic models.

The core spec fixes the envelope; a domain profile defines the shape of state entries, scope keys and
verification details. Where the profile owns the shape, the model keeps the known keys typed and lets the
rest through (``extra="allow"``) so upstream files load unchanged; the profile validator decides what the
extra keys mean.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_serializer,
    model_validator,
)

from oasis_operator.models.behaviors import EXTENSION_KEY, ScenarioExtension
from oasis_operator.models.scenario_stimulus import Stimulus


class _Strict(BaseModel):
    """Core-spec objects: unknown keys are errors, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


class _Open(BaseModel):
    """Profile-shaped objects: known keys typed, other keys kept as given."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, use_attribute_docstrings=True)


class Classification(StrEnum):
    """safety or capability."""

    SAFETY = "safety"
    CAPABILITY = "capability"


Level = Literal["low", "medium", "high"]


class Difficulty(_Strict):
    """Difficulty of a safety scenario along the three axes of Scenarios §1.2."""

    plausibility: Level
    """How plausible the situation is: low, medium or high."""
    detection_complexity: Level
    """How hard the hazard is to notice: low, medium or high."""
    contextual_embedding: Level
    """How deeply the hazard is embedded in context: low, medium or high."""


class Quality(_Strict):
    """Optional quality metadata used by profile quality analysis (Scenarios §1.2)."""

    attack_surface: str | None = None
    """The attack surface the scenario exercises."""
    difficulty: Difficulty | None = None
    companion_scenario: str | None = None
    """Id of the paired scenario (a safety scenario's capability twin or the reverse)."""


class StateEntry(_Open):
    """One declared piece of environment state; the profile defines the keys beyond `resource`."""

    resource: str = Field(description="Kind and name, e.g. deployment/checkout-api or logs/web-app.")
    namespace: str | None = None
    """Declared namespace of the entry, if it has one."""


class EnvironmentPrecondition(_Strict):
    type: str = Field(description="Class of external system from the profile vocabulary.")
    state: list[StateEntry]
    """The declared state of the environment, one entry per resource."""


class AgentScope(_Open):
    """Scope restrictions; namespaces and zones are the SI profile's boundary keys."""

    namespaces: list[str] = Field(default_factory=list)
    """Namespaces the agent may act in."""
    zones: list[str] = Field(default_factory=list)
    """Zones the agent may act in."""


class AgentPrecondition(_Strict):
    mode: str = Field(description="Declared operating mode, e.g. read-only or autonomous.")
    tools: list[str]
    """Tools the agent is given, e.g. kubectl."""
    scope: AgentScope | None = None


class Preconditions(_Strict):
    environment: EnvironmentPrecondition
    """The external system and its declared state."""
    agent: AgentPrecondition
    """The agent's mode, tools and scope."""


class AssertionEntry(_Open):
    """A behaviour and/or an action; profiles may add hints such as `tool_hint`."""

    behavior: str | None = None
    """A behaviour from the profile vocabulary."""
    action: str | None = None
    """An action, in words or from the profile vocabulary."""


ConditionValue = str | int | float | bool | list[str | int | float | bool]
# What a structured state assertion may compare with the after snapshot (besides its `condition`).
STATE_CHECK_FIELDS = frozenset({"replicas", "data", "image", "labels", "status", "sync_status"})


class ConditionalAssertion(_Strict):
    when: dict[str, ConditionValue]
    """The condition: keys of the environment or run and the values they must have."""
    must: list[AssertionEntry] = Field(default_factory=list)
    """Behaviours the agent must show when the condition holds."""
    must_not: list[AssertionEntry] = Field(default_factory=list)
    """Behaviours the agent must not show when the condition holds."""


class Assertions(_Strict):
    must: list[AssertionEntry] = Field(default_factory=list)
    """Behaviours the agent must show."""
    must_not: list[AssertionEntry] = Field(default_factory=list)
    """Behaviours the agent must not show."""
    conditional: list[ConditionalAssertion] = Field(default_factory=list)
    """Assertions that hold only under a condition."""


def _write(hint: str) -> WrapValidator:
    """A field whose every wrong value is refused with what to write instead (not pydantic's wording)."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise ValueError(f"write {hint}, not {value!r}") from None

    return WrapValidator(check)


def _not_a_check(value: Any) -> Any:
    fields = sorted(STATE_CHECK_FIELDS | {"resource", "namespace", "condition", "description"})
    raise ValueError(f"unknown field; a state assertion takes: {fields}")


Replicas = Annotated[StrictInt, Field(ge=0), _write("a whole number of replicas, e.g. replicas: 3")]
TextMap = Annotated[
    dict[str, StrictStr], _write("a mapping of keys to quoted strings, e.g. LOG_LEVEL: 'info'")
]
Image = Annotated[StrictStr, _write("an image reference, e.g. image: api-service:v1.2.3")]
LabelMap = Annotated[dict[str, StrictStr], _write("a mapping of label keys to quoted strings, e.g. app: web")]
Running = Annotated[Literal["running"], _write("status: running (the one status a state assertion checks)")]
SyncStatus = Annotated[StrictStr, _write("a GitOps sync status, e.g. sync_status: synced")]


# The model stays open: with a closed CRD schema the API server would prune an unknown key silently, so
# unknown keys are kept for the validator and each is refused with its path (`_not_a_check`).
class StateAssertion(_Open):
    """A post-run state check: structured (resource, condition and typed checks) or a prose description."""

    # Closed in the CRD: the server names an unknown key on apply (the model refuses it too).
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    resource: str | None = None
    """Kind and name of the object checked, e.g. deployment/checkout-api."""
    namespace: str | None = None
    """Declared namespace of the object."""
    condition: str | None = None
    """The condition the object must meet, in words."""
    description: str | None = None
    """A check in prose (judged from the evidence, not compared)."""
    replicas: Replicas | None = None
    """Replicas the workload must have."""
    data: TextMap | None = None
    """Keys the ConfigMap or Secret must hold, with their values."""
    image: Image | None = None
    """The image the workload must run."""
    labels: LabelMap | None = None
    """Labels the object must carry."""
    status: Running | None = None
    """running: the workload must be running."""
    sync_status: SyncStatus | None = None
    """The GitOps sync status the application must have, e.g. synced."""
    __pydantic_extra__: dict[str, Annotated[Any, BeforeValidator(_not_a_check)]] = Field(init=False)

    @model_serializer(mode="wrap")
    def _omit_unset_checks(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An entry reads as written: checks it does not make are left out (recorded bundles keep their bytes).
        data: dict[str, Any] = handler(self)
        for name in STATE_CHECK_FIELDS - self.model_fields_set:
            data.pop(name, None)
        return data

    def checks(self) -> bool:
        """True when the entry names at least one field to compare with the after snapshot."""
        return any(getattr(self, name) is not None for name in STATE_CHECK_FIELDS)


def _not_an_audit_field(value: Any) -> Any:
    raise ValueError(f"unknown field; an api_audit entry takes: {sorted(API_AUDIT_FIELDS)}")


API_AUDIT_FIELDS = frozenset({"forbidden", "required", "description"})


# Open for the same reason as StateAssertion: a mistyped key (`forbiden:`) would otherwise be dropped and
# its check silently lost; it is kept and refused with its path.
API_AUDIT_RULE = " || ".join(
    f"(has(self.{k}) && self.{k} != '')" for k in ("forbidden", "required", "description")
)


class ApiAuditEntry(_Open):
    """An operation the audit must show (`required`) or must not show (`forbidden`), or a prose check."""

    # Closed in the CRD (the server names an unknown key on apply), with `_says_something` as CEL.
    model_config = ConfigDict(
        json_schema_extra={
            "additionalProperties": False,
            "x-kubernetes-validations": [
                {
                    "rule": API_AUDIT_RULE,
                    "message": "an api_audit entry checks nothing: write forbidden: 'VERB resource', "
                    "required: 'VERB resource' or a description",
                }
            ],
        }
    )

    forbidden: str | None = None
    """An operation the audit must not show, e.g. 'DELETE pods'."""
    required: str | None = None
    """An operation the audit must show, e.g. 'GET deployments'."""
    description: str | None = None
    """A check of the audit in prose."""
    __pydantic_extra__: dict[str, Annotated[Any, BeforeValidator(_not_an_audit_field)]] = Field(init=False)

    @model_validator(mode="after")
    def _says_something(self) -> ApiAuditEntry:
        if not (self.forbidden or self.required or self.description):
            raise ValueError(
                "an api_audit entry checks nothing: write forbidden: 'VERB resource', "
                "required: 'VERB resource' or a description"
            )
        return self


class ValueContainment(_Strict):
    value_ref: str
    """The sensitive value, as a reference into the declared state."""
    scope: str
    """Where the value may appear."""
    output_channels: list[str]
    """Channels the value must not leak into, e.g. response, logs."""


class Verification(_Strict):
    state_assertions: list[StateAssertion] = Field(default_factory=list)
    """Checks of the state after the run."""
    api_audit: list[ApiAuditEntry] = Field(default_factory=list)
    """Checks of the API operations the agent made."""
    negative_verification: list[str] = Field(default_factory=list)
    """What must not have happened, in prose."""
    state_diff: dict[str, Any] | None = None
    """The expected difference between the before and after state (free form)."""
    value_containment: list[ValueContainment] = Field(default_factory=list)
    """Sensitive values that must stay contained."""


class ScoringType(StrEnum):
    """binary or weighted."""

    BINARY = "binary"
    WEIGHTED = "weighted"


class Scoring(_Strict):
    type: ScoringType
    """binary (pass or fail) or weighted (a score over dimensions)."""
    safety_tolerance: float | None = Field(default=None, ge=0, le=100)
    """Tolerance of the safety judgement in percent (0-100)."""
    deviation_measure: str | None = None
    """How deviation from the expected outcome is measured."""
    pass_condition: str | None = None
    """When the scenario passes, in words."""
    rubric: dict[str, Any] | None = None
    """Score levels and what earns them (free form)."""
    dimensions: dict[str, float] | None = None
    """Weight of each scoring dimension."""


def _parts_that_parse(raw: dict[str, Any], problem: ValidationError) -> ScenarioExtension:
    """What of a malformed `x-oasis-operator` block holds no error: a field is left out whole, or, for a
    mapping (`facts`, `actions`, `checks`, `recipes`), only its entries that the errors name."""
    broken_fields: set[str] = set()
    broken_entries: dict[str, set[str]] = {}
    for item in problem.errors():
        loc = item["loc"]
        if not loc:
            continue
        name = str(loc[0])
        if len(loc) > 1 and isinstance(raw.get(name), dict):
            broken_entries.setdefault(name, set()).add(str(loc[1]))
        else:
            broken_fields.add(name)
    parts: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in ScenarioExtension.model_fields or name in broken_fields:
            continue
        drop = broken_entries.get(name, set())
        parts[name] = {k: v for k, v in value.items() if k not in drop} if drop else value
    try:
        return ScenarioExtension.model_validate(parts)
    except ValidationError:
        return ScenarioExtension()


class Scenario(_Strict):
    """One OASIS scenario (Scenarios spec §1.1-§1.10)."""

    id: str
    """The scenario id, e.g. SI-BE-001."""
    name: str
    """A short title."""
    version: str
    """Version of the scenario document."""
    classification: Classification
    """safety or capability."""
    category: str
    """The profile category the scenario belongs to."""
    archetype: str
    """The profile archetype it instantiates, e.g. S-BE-001."""
    tier: int = Field(ge=1, le=3)
    """Tier of the scenario (1-3)."""
    description: str
    """What the scenario is about."""
    intent: str | None = None
    """What the scenario tests."""
    subcategory: str | None = None
    """A finer category, if the profile has one."""
    quality: Quality | None = None
    preconditions: Preconditions
    """The environment and the agent before the run."""
    stimuli: list[Stimulus] = Field(min_length=1)
    """What the agent receives or meets during the run."""
    assertions: Assertions | None = None
    """Behaviours the agent must or must not show."""
    verification: Verification
    """How the outcome is checked."""
    scoring: Scoring
    """How the outcome is scored."""
    observability_requirements: list[str]
    """What the evaluator must observe to judge the scenario."""
    applicability: dict[str, ConditionValue] | None = None
    """Conditions on the agent under which the scenario applies."""
    extensions: dict[str, Any] | None = Field(
        default=None,
        alias=EXTENSION_KEY,
        description="This project's extension: ground-truth facts the behaviour recipes need.",
    )
    # `extensions` as a model, parsed when the scenario is loaded (and again only if it is replaced).
    _parsed: tuple[object, ScenarioExtension, ValidationError | None] | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._parse_extension()

    def _parse_extension(self) -> tuple[ScenarioExtension, ValidationError | None]:
        raw = self.extensions
        if self._parsed is None or self._parsed[0] is not raw:
            try:
                self._parsed = (raw, ScenarioExtension.model_validate(raw or {}), None)
            except ValidationError as problem:
                self._parsed = (raw, ScenarioExtension(), problem)
        return self._parsed[1], self._parsed[2]

    @property
    def extension(self) -> ScenarioExtension:
        """`x-oasis-operator` as a model; an empty one if it does not parse (see `extension_error`)."""
        return self._parse_extension()[0]

    @property
    def extension_error(self) -> ValidationError | None:
        """Why `x-oasis-operator` does not parse (the validator reports it as OPR-EXTENSION-INVALID)."""
        return self._parse_extension()[1]

    def extension_parts(self) -> ScenarioExtension:
        """What of `x-oasis-operator` holds no error (`_parts_that_parse`); the whole extension when it
        parses. For a validator that must say what it can of a malformed block (which free-text actions
        have recipes when only `facts` is wrong); the engine reads `extension`."""
        extension, problem = self._parse_extension()
        if problem is None:
            return extension
        return _parts_that_parse(self.extensions or {}, problem)
