"""Specs and statuses of the project's custom resources (group oasis.evaluation.dev, v1alpha1).

These models are the source of truth for `crds/`: `oasis crds generate` renders the CRD manifests from
them and a unit test fails when the files and the models drift.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oasis_operator import API_GROUP
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.mutation import MutationStrategy
from oasis_operator.models.profile import Finding
from oasis_operator.models.scenario import Classification, Scenario
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.models.verdict_summary import VerdictSummary

WRAPPER_SHOWN = 200  # characters of the declared wrapper text the status shows

MAX_REPETITIONS = 20  # spec.repetitions: runs per scenario at most (status rows stay bounded)
# Scenario runs (selected scenarios x repetitions) one evaluation may hold: what it keeps in etcd is bounded
# by them (docs/install.md §8). The whole shipped profile at MAX_REPETITIONS is 50 x 20 = 1000.
MAX_SCENARIO_RUNS = 1000


class _Spec(BaseModel):
    """Our own CR fields: camelCase, strict (a typo is an error, never silently dropped).

    An attribute's docstring is its description in the CRD (what `kubectl explain` prints).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


def _cel(rule: str, message: str, **more: str) -> dict[str, Any]:
    """A CEL rule for the CRD schema (`x-kubernetes-validations`), beside the validator it mirrors."""
    return {"x-kubernetes-validations": [{"rule": rule, "message": message, **more}]}


# Conditions are a list map keyed by type: a server-side apply merges them by type, and one type appears once.
CONDITIONS_LIST_MAP: dict[str, Any] = {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}
# What the server fills in for an object field the user left out: `{}`, so the defaults inside it apply.
_DEFAULT_OBJECT: dict[str, Any] = {"default": {}}


# --- shared ----------------------------------------------------------------------------------------
class ConditionStatus(StrEnum):
    """True, False or Unknown."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(_Spec):
    """A Kubernetes-style status condition."""

    type: str
    """The condition's type, e.g. Ready, Progressing, Reconciling, Stalled, Degraded, SpecFrozen, Valid."""
    status: ConditionStatus
    """True, False or Unknown."""
    reason: str = Field(pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    """A CamelCase word a program can match, e.g. VerdictReady or InvalidSpec."""
    message: str = ""
    """What happened, for a person."""
    lastTransitionTime: str
    """When the status last changed (RFC 3339)."""
    observedGeneration: int | None = None
    """The object's generation the condition was set for."""


class EvaluationRef(BaseModel):
    """Which OASISEvaluation a run, its ConfigMaps and its sandboxes belong to."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> EvaluationRef:
        """The reference to an object as the API server returns it (its `metadata`)."""
        meta = body["metadata"]
        return cls(namespace=meta["namespace"], name=meta["name"], uid=meta["uid"])

    @property
    def key(self) -> str:
        """`namespace/name`, how sandboxes label their evaluation."""
        return f"{self.namespace}/{self.name}"


class ProfileRef(_Spec):
    """Which OASIS domain profile a resource belongs to."""

    name: str = Field(min_length=1, max_length=253)
    """Profile name, e.g. software-infrastructure (with or without the oasis-profile- prefix)."""
    version: str | None = Field(default=None, description="Profile version; empty means the shipped one.")


class SecretKeyRef(_Spec):
    """A key of a Secret in the evaluation's namespace."""

    name: str = Field(min_length=1, max_length=253)
    """Name of the Secret."""
    key: str = Field(min_length=1, max_length=253)
    """Key in the Secret's data."""


class LabelSelectorRequirement(_Spec):
    """A label selector requirement: a key, an operator and values (as in Kubernetes label selectors)."""

    model_config = ConfigDict(
        json_schema_extra=_cel(
            "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
            "operator In and NotIn need at least one value; Exists and DoesNotExist take none",
            fieldPath=".values",
        )
    )

    key: str = Field(max_length=317)
    """The label key the requirement applies to."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    """How the key relates to the values."""
    values: list[Annotated[str, Field(max_length=63)]] = Field(default_factory=list, max_length=64)
    """Label values: at least one for In and NotIn, none for Exists and DoesNotExist."""


class LabelSelector(_Spec):
    """Labels a resource must have: matchLabels and matchExpressions, all of them (AND)."""

    matchLabels: dict[str, str] = Field(default_factory=dict)
    """Labels the resource must carry, key to value."""
    matchExpressions: list[LabelSelectorRequirement] = Field(default_factory=list, max_length=32)
    """Requirements on the resource's labels."""


# --- Scenario ----------------------------------------------------------------------------------------
class ScenarioSpec(Scenario):
    """One OASIS scenario document plus the profile it is written against."""

    profile: ProfileRef | None = Field(
        default=None, description="The profile the scenario is written against."
    )


class ScenarioStatus(_Spec):
    """What the operator's validator found in the scenario."""

    observedGeneration: int | None = None
    """The generation the operator last validated."""
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=CONDITIONS_LIST_MAP)
    """Valid: True when the scenario passed the profile validator, with findings otherwise."""
    scenarioId: str | None = None
    """The scenario's id as validated."""
    classification: Classification | None = None
    """safety or capability, as validated."""
    findings: list[Finding] = Field(default_factory=list)
    """The validator's findings (errors, warnings, infos)."""
    kopf: dict[str, Any] | None = Field(
        default=None, description="The operator framework's handler progress (kept out of annotations)."
    )


# --- OASISEvaluation ---------------------------------------------------------------------------------
READ_ONLY_PATHS_RULE = "self.all(p, p.startsWith('/') && !p.matches('^/+$') && !(p + '/').contains('/../'))"


class HttpAgent(_Spec):
    """An agent reached over HTTP with the public reference runner's wire format."""

    url: str = Field(pattern=r"^https?://", description="Base URL of the agent.")
    tokenSecretRef: SecretKeyRef | None = Field(default=None, description="Bearer token for the agent.")
    timeoutSeconds: int = Field(default=600, ge=1, le=86400)
    """Seconds the agent may take to answer one scenario."""


class CommandAgent(_Spec):
    """A local program: the prompt on stdin, KUBECONFIG in its environment, JSON on stdout."""

    command: list[str] = Field(min_length=1)
    """The program and its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the program, beside KUBECONFIG."""
    timeoutSeconds: int = Field(default=600, ge=1, le=86400)
    """Seconds the program may take to answer one scenario."""
    isolation: Literal["sandbox", "none"] = Field(
        default="sandbox",
        description="sandbox: each call runs in a bubblewrap sandbox (private filesystem view, own PID "
        "namespace, an unprivileged user under a root operator); the run is refused where none can be set "
        "up. none: the agent runs as the operator's user with its whole view, and the report says so.",
    )
    readOnlyPaths: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list,
        max_length=64,
        description="Host paths the sandboxed agent may read (its program's files), beside the system "
        "directories, the program itself and its interpreter: absolute, other than '/', without '..'.",
        json_schema_extra=_cel(
            READ_ONLY_PATHS_RULE, "every path must be absolute, other than '/', and without '..'"
        ),
    )

    @model_validator(mode="after")
    def _absolute_paths(self) -> CommandAgent:
        for index, path in enumerate(self.readOnlyPaths):  # the schema's READ_ONLY_PATHS_RULE
            if not path.startswith("/") or path.rstrip("/") == "" or "/../" in f"{path}/":
                raise ValueError(
                    f"readOnlyPaths[{index}]: {path!r} must be an absolute path other than '/' without '..'"
                )
        return self


class JobAgent(_Spec):
    """An agent image run as a Job in the sandbox with the kubeconfig mounted."""

    image: str = Field(min_length=1)
    """The agent's container image."""
    command: list[str] = Field(default_factory=list)
    """The container's entrypoint; empty keeps the image's."""
    args: list[str] = Field(default_factory=list)
    """Arguments of the entrypoint; empty keeps the image's."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the container, beside KUBECONFIG."""
    timeoutSeconds: int = Field(default=600, ge=1, le=86400)
    """Seconds the Job may take to answer one scenario."""


AGENT_KINDS_RULE = "[has(self.http), has(self.command), has(self.job)].exists_one(x, x)"


class AgentSpec(_Spec):
    """How to reach the agent under evaluation: exactly one of http, command or job."""

    model_config = ConfigDict(
        json_schema_extra=_cel(AGENT_KINDS_RULE, "set exactly one of agent.http, agent.command, agent.job")
    )

    name: str | None = Field(default=None, description="Display name; the agent's own identity wins.")
    http: HttpAgent | None = None
    command: CommandAgent | None = None
    job: JobAgent | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> AgentSpec:  # the schema's AGENT_KINDS_RULE
        given = [k for k in ("http", "command", "job") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"set exactly one of agent.http, agent.command, agent.job (got {given or 'none'})"
            )
        return self


class ScenarioSelection(_Spec):
    """Which scenarios to run: the built-in profile corpus and/or Scenario resources, then filters."""

    builtin: bool = Field(default=True, description="Include the profile's shipped scenarios.")
    selector: LabelSelector | None = Field(
        default=None, description="Also include matching Scenario objects."
    )
    ids: list[str] = Field(default_factory=list, description="Keep only ids matching one of these globs.")
    categories: list[str] = Field(default_factory=list)
    """Keep only scenarios of these categories (all when empty)."""
    classifications: list[Classification] = Field(default_factory=list)
    """Keep only safety or capability scenarios (both when empty)."""


class EnvironmentSpec(_Spec):
    """Where sandboxes are built; empty means the operator's own sandbox cluster and namespace prefix."""

    kubeconfigSecretRef: SecretKeyRef | None = None
    """A kubeconfig of another sandbox cluster; empty means the operator's own."""
    namespacePrefix: str | None = Field(
        default=None,
        pattern=r"^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$",
        description="Prefix of sandbox namespaces; default: the operator's (OASIS_SANDBOX_PREFIX).",
    )


class Timeouts(_Spec):
    """Time limits of the run."""

    scenarioSeconds: int = Field(default=900, ge=1)
    """Seconds one scenario may take from provisioning to judgement."""
    agentSeconds: int = Field(default=600, ge=1)
    """Seconds the agent may take per scenario when its own settings name none."""


class EvaluatorSpec(_Spec):
    """Who ran the evaluation, as the verdict names the evaluator."""

    name: str | None = None
    """The evaluator's name; default: this operator."""
    version: str | None = None
    """The evaluator's version; default: this operator's."""


class MutationSpec(_Spec):
    """Run every scenario on a twin whose declared names are consistently replaced (`models.mutation`)."""

    seed: int = Field(
        ge=0,
        le=2147483647,
        description="Seed of the name mapping: the same seed gives every scenario the same new names, "
        "another seed other names.",
    )
    strategy: MutationStrategy = Field(
        default=MutationStrategy.RENAME,
        description="rename: every declared namespace and object name gets a new name of two neutral words.",
    )


MAX_TTL_SECONDS = 315360000  # ten years: longer is keeping it (leave the field out)


MANAGED_BY_OPERATOR = f"{API_GROUP}/operator"
"""`spec.managedBy` of an evaluation this operator runs (the same as leaving the field out)."""
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
"""`spec.managedBy` of an evaluation Kueue's MultiKueue dispatches to a worker cluster (docs/kueue.md)."""


def runs_here(managed_by: str | None) -> bool:
    """This operator runs an evaluation whose `spec.managedBy` is `managed_by`: empty or ours."""
    return managed_by in (None, "", MANAGED_BY_OPERATOR)


MANAGED_BY_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"


class OASISEvaluationSpec(_Spec):
    """What to evaluate and how: the profile, the agent, the scenarios and the run's limits."""

    model_config = ConfigDict(
        json_schema_extra=_cel(
            "has(self.managedBy) == has(oldSelf.managedBy)",
            "spec.managedBy is immutable: it cannot be added or removed after creation",
            reason="FieldValueInvalid",
            fieldPath=".managedBy",
        )
    )

    profile: ProfileRef
    tier: int = Field(default=1, ge=1, le=3)
    """Highest scenario tier to run (1-3); scenarios above it are left out."""
    agent: AgentSpec
    scenarios: ScenarioSelection = Field(default_factory=ScenarioSelection, json_schema_extra=_DEFAULT_OBJECT)
    environment: EnvironmentSpec = Field(default_factory=EnvironmentSpec, json_schema_extra=_DEFAULT_OBJECT)
    parallelism: int = Field(default=1, ge=1, le=32)
    """Scenarios run at the same time."""
    repetitions: int = Field(
        default=1,
        ge=1,
        le=MAX_REPETITIONS,
        description="Runs of every selected scenario, each in a fresh sandbox; a safety scenario passes "
        "only if every run passes, and one whose runs differ is flagged flaky.",
    )
    timeouts: Timeouts = Field(default_factory=Timeouts, json_schema_extra=_DEFAULT_OBJECT)
    evaluator: EvaluatorSpec | None = None
    mutation: MutationSpec | None = Field(
        default=None,
        description="Replace the declared names of every scenario (seeded); the report records the mapping.",
    )
    ttlSecondsAfterFinished: int | None = Field(
        default=None,
        ge=0,
        le=MAX_TTL_SECONDS,
        description="Seconds after the run finished (Completed, Aborted or Failed) when the operator "
        "deletes the evaluation with its evidence and report ConfigMaps; 0 deletes it at once. Empty: "
        "the operator's default (chart value operator.ttlSecondsAfterFinished), which by default keeps it.",
    )
    suspend: bool | None = Field(
        default=None,
        description="As for a Job: true holds the evaluation (nothing starts; a running one stops its "
        "scenarios, sandboxes torn down, nothing half-judged kept); false or empty lets it run, a stopped "
        "one resuming from its status with the scenarios already judged. The one field a started run "
        "lets change; with a Kueue queue label its Workload is deactivated while suspended.",
    )
    managedBy: str | None = Field(
        default=None,
        max_length=63,
        pattern=MANAGED_BY_PATTERN,
        description="The controller that runs this evaluation, as for a Job: empty or "
        f"'{MANAGED_BY_OPERATOR}' is this operator; any other value (such as '{MANAGED_BY_MULTIKUEUE}', "
        "set for MultiKueue to dispatch it to a worker cluster) makes this operator leave it alone. "
        "Immutable.",
        json_schema_extra=_cel("self == oldSelf", "spec.managedBy is immutable", reason="FieldValueInvalid"),
    )


class Phase(StrEnum):
    """Where the run is: Pending, Preflight, Safety, Capability, or over (Completed, Aborted, Failed)."""

    PENDING = "Pending"
    PREFLIGHT = "Preflight"
    SAFETY = "Safety"
    CAPABILITY = "Capability"
    COMPLETED = "Completed"
    ABORTED = "Aborted"
    FAILED = "Failed"


class ScoreSpread(_Spec):
    """A capability score's spread over a scenario's runs."""

    min: float
    """Lowest score of the runs."""
    max: float
    """Highest score of the runs."""
    std: float
    """Standard deviation of the scores."""


class ScenarioRow(_Spec):
    """One scenario of the run as a person scans it; the full result is in the evidence ConfigMap."""

    id: str
    """The scenario's id."""
    classification: Classification
    """safety or capability."""
    category: str | None = None
    """The scenario's category."""
    result: str | None = Field(
        default=None, description="PASS, FAIL, PROVIDER_FAILURE, NOT_APPLICABLE, SCORED or UNEVALUABLE."
    )
    score: float | None = None
    """A capability scenario's score (0-100)."""
    reason: str | None = Field(default=None, description="Why the scenario was NOT_APPLICABLE.")
    startedAt: str | None = None
    """When the scenario started (RFC 3339)."""
    finishedAt: str | None = None
    """When the scenario was judged (RFC 3339)."""
    message: str | None = None
    """What went wrong, or why the scenario did not run."""
    agentError: str | None = Field(
        default=None, description="How the agent call failed: timeout, transport, protocol or exit."
    )
    unevaluable: str | None = Field(
        default=None,
        description="With result UNEVALUABLE: the agent failure that took the scenario out of scoring.",
    )
    evidence: str | None = Field(
        default=None, description="ConfigMap holding the result and evidence bundle."
    )
    timings: PhaseTimings | None = Field(
        default=None, description="Wall seconds per phase; teardown is filled in once the sandbox is gone."
    )
    # spec.repetitions > 1 only (status.rows.run_code has the letters):
    runs: str | None = Field(
        default=None,
        pattern=r"^[-PFESU?]{2,20}$",
        description="With spec.repetitions > 1: each run's result as one letter in run order (P pass, "
        "F fail, E provider failure, S scored, U unevaluable, - not finished).",
    )
    flaky: bool | None = Field(default=None, description="The scenario's runs did not all agree.")
    scoreSpread: ScoreSpread | None = Field(
        default=None, description="Capability score over the runs (score is their mean)."
    )


class Progress(_Spec):
    """Counts over the rows; done/total count runs (a row counts once per run with spec.repetitions)."""

    done: int = 0
    """Runs finished."""
    total: int = 0
    """Runs planned."""
    passed: int = 0
    """Safety runs that passed."""
    failed: int = 0
    """Safety runs that failed."""
    providerFailure: int = 0
    """Runs the sandbox provider could not carry out."""
    notApplicable: int = 0
    """Scenarios that do not apply to the agent."""
    scored: int = 0
    """Capability runs scored."""
    unevaluable: int = 0
    """Runs an agent failure took out of scoring."""


class AgentStatus(_Spec):
    """The agent as it identified itself, and the effective configuration the run used."""

    name: str | None = None
    """The agent's declared name."""
    version: str | None = None
    """The agent's declared version."""
    configuration: dict[str, str] = Field(default_factory=dict)
    """The effective configuration the run used (values that are not strings shown as JSON)."""
    binaryVersion: str | None = Field(default=None, description="Declared version of the agent's program.")
    binaryDigest: str | None = Field(default=None, description="Declared digest of the agent's program.")
    configHash: str | None = Field(default=None, description="Declared digest of the agent's configuration.")
    systemPromptHash: str | None = Field(default=None, description="Declared digest of its system prompt.")
    model: str | None = Field(default=None, description="The model the agent declared.")
    provider: str | None = Field(default=None, description="The model provider the agent declared.")
    wrapperText: str | None = Field(
        default=None,
        description=f"The start of the declared wrapper text (at most {WRAPPER_SHOWN} characters; the "
        "verdict document has all of it).",
    )

    @classmethod
    def of(cls, identity: AgentIdentity, configuration: Mapping[str, Any]) -> AgentStatus:
        """The status form of the agent's identity; configuration values not strings are shown as JSON."""
        shown = {k: v if isinstance(v, str) else json.dumps(v) for k, v in sorted(configuration.items())}
        wrapper = identity.wrapper_text
        if wrapper is not None and len(wrapper) > WRAPPER_SHOWN:
            wrapper = wrapper[: WRAPPER_SHOWN - 1] + "…"
        return cls(
            name=identity.name,
            version=identity.version,
            configuration=shown,
            binaryVersion=identity.binary_version,
            binaryDigest=identity.binary_digest,
            configHash=identity.config_hash,
            systemPromptHash=identity.system_prompt_hash,
            model=identity.model,
            provider=identity.provider,
            wrapperText=wrapper,
        )


class OASISEvaluationStatus(_Spec):
    """The run as it stands: phase, conditions, one row per scenario, and the verdict once it is over."""

    phase: Phase | None = None
    observedGeneration: int | None = None
    """The generation the operator last acted on."""
    runGeneration: int | None = Field(default=None, description="The spec generation the run uses (frozen).")
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=CONDITIONS_LIST_MAP)
    """Ready, Progressing, Reconciling, Stalled (kstatus), Degraded and SpecFrozen."""
    agent: AgentStatus | None = None
    startedAt: str | None = None
    """When the run started (RFC 3339)."""
    completedAt: str | None = None
    """When the run finished (RFC 3339); the TTL counts from here."""
    preflightGaps: list[str] = Field(default_factory=list)
    """What the sandbox provider's preflight found missing."""
    sandboxServer: str | None = Field(
        default=None,
        description="The sandbox API server the preflight self-check ran on, e.g. "
        "`kube-apiserver v1.37.2 (linux/amd64)`; unset when it did not answer.",
    )
    progress: Progress | None = None
    scenarios: list[ScenarioRow] = Field(default_factory=list)
    """One row per selected scenario, in run order."""
    summary: VerdictSummary | None = None
    reportConfigMaps: list[str] = Field(default_factory=list)
    """ConfigMaps holding the verdict and the report."""
    kopf: dict[str, Any] | None = Field(
        default=None, description="The operator framework's handler progress (kept out of annotations)."
    )
