"""Specs and statuses of the project's custom resources (group oasis.evaluation.dev, v1alpha1).

These models are the source of truth for `crds/`: `oasis crds generate` renders the CRD manifests from
them and a unit test fails when the files and the models drift.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.mutation import MutationStrategy
from oasis_operator.models.profile import Finding
from oasis_operator.models.scenario import Classification, Scenario
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.models.verdict_summary import VerdictSummary

WRAPPER_SHOWN = 200  # characters of the declared wrapper text the status shows

MAX_REPETITIONS = 20  # spec.repetitions: runs per scenario at most (status rows stay bounded)


class _Spec(BaseModel):
    """Our own CR fields: camelCase, strict (a typo is an error, never silently dropped)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# --- shared ----------------------------------------------------------------------------------------
class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(_Spec):
    """A Kubernetes-style status condition."""

    type: str
    status: ConditionStatus
    reason: str = Field(pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    message: str = ""
    lastTransitionTime: str
    observedGeneration: int | None = None


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
    version: str | None = Field(default=None, description="Profile version; empty means the shipped one.")


class SecretKeyRef(_Spec):
    name: str = Field(min_length=1, max_length=253)
    key: str = Field(min_length=1, max_length=253)


class LabelSelectorRequirement(_Spec):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(_Spec):
    matchLabels: dict[str, str] = Field(default_factory=dict)
    matchExpressions: list[LabelSelectorRequirement] = Field(default_factory=list)


# --- Scenario ----------------------------------------------------------------------------------------
class ScenarioSpec(Scenario):
    """One OASIS scenario document plus the profile it is written against."""

    profile: ProfileRef | None = None


class ScenarioStatus(_Spec):
    observedGeneration: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    scenarioId: str | None = None
    classification: Classification | None = None
    findings: list[Finding] = Field(default_factory=list)
    kopf: dict[str, Any] | None = Field(
        default=None, description="The operator framework's handler progress (kept out of annotations)."
    )


# --- OASISEvaluation ---------------------------------------------------------------------------------
class HttpAgent(_Spec):
    """An agent reached over HTTP with the public reference runner's wire format."""

    url: str = Field(pattern=r"^https?://", description="Base URL of the agent.")
    tokenSecretRef: SecretKeyRef | None = Field(default=None, description="Bearer token for the agent.")
    timeoutSeconds: int = Field(default=600, ge=1, le=86400)


class CommandAgent(_Spec):
    """A local program: the prompt on stdin, KUBECONFIG in its environment, JSON on stdout."""

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    timeoutSeconds: int = Field(default=600, ge=1, le=86400)
    isolation: Literal["sandbox", "none"] = Field(
        default="sandbox",
        description="sandbox: each call runs in a bubblewrap sandbox (private filesystem view, own PID "
        "namespace, an unprivileged user under a root operator); the run is refused where none can be set "
        "up. none: the agent runs as the operator's user with its whole view, and the report says so.",
    )
    readOnlyPaths: list[str] = Field(
        default_factory=list,
        description="Host paths the sandboxed agent may read (its program's files), beside the system "
        "directories, the program itself and its interpreter.",
    )

    @model_validator(mode="after")
    def _absolute_paths(self) -> CommandAgent:
        for index, path in enumerate(self.readOnlyPaths):
            if not path.startswith("/") or path.rstrip("/") == "" or "/../" in f"{path}/":
                raise ValueError(
                    f"readOnlyPaths[{index}]: {path!r} must be an absolute path other than '/' without '..'"
                )
        return self


class JobAgent(_Spec):
    """An agent image run as a Job in the sandbox with the kubeconfig mounted."""

    image: str = Field(min_length=1)
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    timeoutSeconds: int = Field(default=600, ge=1, le=86400)


class AgentSpec(_Spec):
    """How to reach the agent under evaluation: exactly one of http, command or job."""

    name: str | None = Field(default=None, description="Display name; the agent's own identity wins.")
    http: HttpAgent | None = None
    command: CommandAgent | None = None
    job: JobAgent | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> AgentSpec:
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
    classifications: list[Classification] = Field(default_factory=list)


class EnvironmentSpec(_Spec):
    """Where sandboxes are built; empty means the operator's own sandbox cluster and namespace prefix."""

    kubeconfigSecretRef: SecretKeyRef | None = None
    namespacePrefix: str | None = Field(
        default=None,
        pattern=r"^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$",
        description="Prefix of sandbox namespaces; default: the operator's (OASIS_SANDBOX_PREFIX).",
    )


class Timeouts(_Spec):
    scenarioSeconds: int = Field(default=900, ge=1)
    agentSeconds: int = Field(default=600, ge=1)


class EvaluatorSpec(_Spec):
    name: str | None = None
    version: str | None = None


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


class OASISEvaluationSpec(_Spec):
    profile: ProfileRef
    tier: int = Field(default=1, ge=1, le=3)
    agent: AgentSpec
    scenarios: ScenarioSelection = Field(default_factory=ScenarioSelection)
    environment: EnvironmentSpec = Field(default_factory=EnvironmentSpec)
    parallelism: int = Field(default=1, ge=1, le=32)
    repetitions: int = Field(
        default=1,
        ge=1,
        le=MAX_REPETITIONS,
        description="Runs of every selected scenario, each in a fresh sandbox; a safety scenario passes "
        "only if every run passes, and one whose runs differ is flagged flaky.",
    )
    timeouts: Timeouts = Field(default_factory=Timeouts)
    evaluator: EvaluatorSpec | None = None
    mutation: MutationSpec | None = Field(
        default=None,
        description="Replace the declared names of every scenario (seeded); the report records the mapping.",
    )


class Phase(StrEnum):
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
    max: float
    std: float


class ScenarioRow(_Spec):
    """One scenario of the run as a person scans it; the full result is in the evidence ConfigMap."""

    id: str
    classification: Classification
    category: str | None = None
    result: str | None = Field(
        default=None, description="PASS, FAIL, PROVIDER_FAILURE, NOT_APPLICABLE, SCORED or UNEVALUABLE."
    )
    score: float | None = None
    reason: str | None = Field(default=None, description="Why the scenario was NOT_APPLICABLE.")
    startedAt: str | None = None
    finishedAt: str | None = None
    message: str | None = None
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
    total: int = 0
    passed: int = 0
    failed: int = 0
    providerFailure: int = 0
    notApplicable: int = 0
    scored: int = 0
    unevaluable: int = 0


class AgentStatus(_Spec):
    """The agent as it identified itself, and the effective configuration the run used."""

    name: str | None = None
    version: str | None = None
    configuration: dict[str, str] = Field(default_factory=dict)
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
    phase: Phase | None = None
    observedGeneration: int | None = None
    runGeneration: int | None = Field(default=None, description="The spec generation the run uses (frozen).")
    conditions: list[Condition] = Field(default_factory=list)
    agent: AgentStatus | None = None
    startedAt: str | None = None
    completedAt: str | None = None
    preflightGaps: list[str] = Field(default_factory=list)
    sandboxServer: str | None = Field(
        default=None,
        description="The sandbox API server the preflight self-check ran on, e.g. "
        "`kube-apiserver v1.37.2 (linux/amd64)`; unset when it did not answer.",
    )
    progress: Progress | None = None
    scenarios: list[ScenarioRow] = Field(default_factory=list)
    summary: VerdictSummary | None = None
    reportConfigMaps: list[str] = Field(default_factory=list)
    kopf: dict[str, Any] | None = Field(
        default=None, description="The operator framework's handler progress (kept out of annotations)."
    )
