"""The evidence bundle: everything the engine may look at when it judges one scenario run.

A bundle is produced by the runner (sandbox, gateway, agent adapter) and consumed by the pure engine.
It is self-contained: it embeds the scenario document that was run, the agent's identity and effective
configuration, the transcript, the gateway's audit record, optionally the API server's audit record,
before/after snapshots of the declared resources, the timelines of the objects watched during the run
(`WindowObservation`), the containment values registered at setup, and the stimuli the gateway applied
while the agent worked.

Every observation carries an ``evidence_source`` block (Reporting §1.1). Only ``available`` (and this
project's synonym ``healthy``) is usable; every other status, including the reserved ``partial`` and
``empty_window`` and this project's ``degraded``, is treated as unreachable, so an empty record from a
broken reader can never become a vacuous PASS.

What the runner puts in the snapshots, for matching by effect to work fully: every declared resource,
plus every ReplicaSet and Pod of the declared namespaces (pod ownership and labels decide whether a pod
deletion restarted a workload and whether deletes removed every pod; ReplicaSet templates decide whether a
template write was a rollback). Objects a controller made keep their controller owner reference in
``metadata.ownerReferences`` (without uid): that marks them as derived, and checks that compare state
look objects up by the names the scenario declares, so controller churn (a pod replaced after a restart)
is never read as a change the agent made to something else.
Containment values are registered in plaintext (the decoded form of a Secret's data).

JSON round-trip is lossless: ``EvidenceBundle.model_validate_json(b.model_dump_json(by_alias=True))``
equals ``b``. Timestamps are ISO 8601 strings supplied by the recorder; the engine never reads a clock.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from oasis_operator.models.agent_failure import AgentFailure
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.mutation import NameMutation
from oasis_operator.models.repetitions import RunIndex
from oasis_operator.models.scenario import ConditionValue, Scenario
from oasis_operator.models.sources import USABLE_STATUSES as USABLE_STATUSES  # noqa: PLC0414 - re-exported
from oasis_operator.models.sources import EvidenceSource as EvidenceSource  # noqa: PLC0414 - re-exported
from oasis_operator.models.sources import SourceStatus as SourceStatus  # noqa: PLC0414 - re-exported
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.models.trail import TrailEntry as TrailEntry  # noqa: PLC0414 - re-exported
from oasis_operator.models.verbs import REQUEST_DELETE_VERBS
from oasis_operator.models.window import WindowObservation

BUNDLE_SCHEMA = "oasis-operator.evidence/v1"
# Annotations that change without anyone acting on the object (kubectl's record of its last apply, the
# Deployment controller's revision, the TTL controller's node cache hint, which it sets on a new Node
# and changes with the cluster's size): snapshots drop them, and the engine never counts them as written.
VOLATILE_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "node.alpha.kubernetes.io/ttl",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Omitting(_Model):
    # Fields left out of the document while None / while empty: a record says only what applies to it
    # (a record of a Kubernetes object has no `served`).
    omit_if_none: ClassVar[tuple[str, ...]] = ()
    omit_if_empty: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in self.omit_if_none:
            if getattr(self, key) is None:
                data.pop(key, None)
        for key in self.omit_if_empty:
            if not getattr(self, key):
                data.pop(key, None)
        return data


class Actor(StrEnum):
    """Who made a request, as the recorder attributed it (never as the request claims).

    ``agent``: the environment's own credential, whatever path it used. ``foreign``: a credential that is
    not the environment's own (a token from the prompt or data, another bearer token, a client
    certificate) presented at the environment's door or seen in its sandbox. ``anonymous``: no credential.
    ``provider``: the operator itself (setup, dynamics, snapshots, teardown). ``controller``: the sandbox
    cluster's own controllers and system identities. ``other``: anything else the API server saw.
    """

    AGENT = "agent"
    FOREIGN = "foreign"
    ANONYMOUS = "anonymous"
    PROVIDER = "provider"
    CONTROLLER = "controller"
    OTHER = "other"


# An upgrade the server accepted: the request was served on a stream (exec, attach, port-forward).
SWITCHING_PROTOCOLS = 101


class AuditEntry(_Omitting):
    """One API request, as recorded by the gateway (or by the API server's own audit log).

    This is the one model of a request from the recorder to the engine: the gateway writes it, the
    API-server audit reader produces it, and the engine reads it.
    """

    omit_if_none = ("served", "client_session")

    seq: int = Field(ge=0, description="Order of the request within its log.")
    time: str = Field(description="ISO 8601 time the request was received.")
    method: str = Field(default="", description="HTTP method, e.g. PATCH.")
    path: str = Field(default="", description="Path as the agent sent it (declared names).")
    verb: str = Field(description="Kubernetes verb: get, list, watch, create, update, patch, delete, ...")
    group: str = Field(default="", description="API group; empty for the core group.")
    version: str = Field(default="v1")
    resource: str = Field(description="Plural resource name, e.g. deployments; or a fixture API name.")
    subresource: str | None = None
    name: str | None = None
    namespace: str | None = Field(default=None, description="Declared namespace the agent addressed.")
    sandbox_namespace: str | None = None
    user: str = Field(default="", description="Identity the request authenticated as.")
    actor: Actor = Field(default=Actor.AGENT, description="Who made it, as the recorder attributed it.")
    credential: str | None = Field(
        default=None,
        description="Fingerprint of the credential presented when it is not the environment's own "
        "(`sha256:<first 16 hex>` of the token or certificate; never the secret itself).",
    )
    content_type: str | None = Field(
        default=None,
        description="Request content type: application/apply-patch+yaml (server-side apply), "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/json, ...",
    )
    query: dict[str, str] = Field(
        default_factory=dict,
        description="Query parameters as sent (dryRun, fieldManager, force, propagationPolicy, "
        "labelSelector, fieldSelector, ...); the last value wins for a repeated key.",
    )
    request_body: Any = None
    label_selector: str | None = None
    field_selector: str | None = None
    response_code: int = Field(ge=0, description="HTTP status returned to the agent (0: no response).")
    response_uid: str | None = Field(default=None, description="metadata.uid of the object returned.")
    response_resource_version: str | None = Field(
        default=None, description="metadata.resourceVersion of the object returned."
    )
    response_body: Any = Field(
        default=None,
        description="The object the server returned for a write (the after-state of that object), "
        "when the recorder kept it; for an exec or attach the gateway served, what it served "
        "(`container`, `command`, `stdout`, `stderr`, `exit_code`, `answer`). A body over the "
        "recorder's bound is kept as "
        '`{"truncated": {"bytes": <size>, "kept": <bound>}, "text": <first bytes>}`.',
    )
    response_bytes: int | None = Field(default=None, description="Size of the answer the agent got.")
    served: list[str] | None = Field(
        default=None,
        description="For a fixture API or pod-log read: the declared state entries the answer was drawn "
        "from, as `<kind>/<name>` (`metrics/order-service`, `traces/slow-checkout`, `logs/api-backend`); "
        "empty when it drew on none (a listing of names only, a miss). Unset for Kubernetes objects, "
        "which `name` and `namespace` identify.",
    )
    completed_at: str | None = Field(default=None, description="ISO 8601 time the answer was complete.")
    note: str = Field(
        default="",
        description="What the recorder noted: why the gateway refused (`refused: ...`), `stream open` "
        "while a watch runs, the door a credential was presented at.",
    )
    client_session: str | None = Field(
        default=None,
        description="The client invocation the request belongs to, when the client names it: kubectl's "
        "`Kubectl-Session` header, one id per kubectl command (`engine/operations.py`).",
    )

    @property
    def dry_run(self) -> bool:
        """True when the server was asked not to persist the request: `dryRun=All` in the query, or in
        the DeleteOptions body of a delete (where kubectl puts it)."""
        in_body = isinstance(self.request_body, dict) and bool(self.request_body.get("dryRun"))
        return bool(self.query.get("dryRun")) or (self.verb in REQUEST_DELETE_VERBS and in_body)

    @property
    def succeeded(self) -> bool:
        """True for a 2xx response, or a 101 (a stream the server opened: exec, attach, port-forward);
        anything else is a refused or failed attempt."""
        return 200 <= self.response_code < 300 or self.response_code == SWITCHING_PROTOCOLS


class AuditLog(_Model):
    """An audit record with the reader's status."""

    evidence_source: EvidenceSource
    append_only: bool = Field(
        default=False, description="The recorder writes entries before forwarding, outside the agent's reach."
    )
    entries: list[AuditEntry] = Field(default_factory=list)


class FieldManager(_Model):
    """One entry of the server's ``metadata.managedFields``: a client and the fields its last write set.

    The API server keeps these for every write (server-side apply as ``Apply``, any other write as
    ``Update``), so they say which client (kubectl, a controller, the provider) owns which field.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    manager: str = Field(description="The field manager: `fieldManager`, else the client's user agent.")
    operation: str = Field(description="Apply (server-side apply) or Update.")
    api_version: str | None = None
    subresource: str | None = Field(default=None, description="e.g. status, scale.")
    time: str | None = None
    fields: dict[str, Any] | None = Field(default=None, description="The owned fields (fieldsV1).")


class ResourceState(_Omitting):
    """One resource as seen at a point in time; ``object`` is None when it did not exist."""

    omit_if_empty = ("managers",)  # an absent object, a server that keeps none

    kind: str = Field(description="Resource type as the scenario names it, e.g. deployment, configmap.")
    name: str
    namespace: str | None = Field(default=None, description="Declared namespace.")
    object: dict[str, Any] | None = None
    managers: list[FieldManager] = Field(
        default_factory=list,
        description="The object's field managers as the server returned them (``object`` omits them, "
        "as they change with every write).",
    )


class Snapshots(_Model):
    """Before/after states of every declared resource (``live``: extra after-run states, read as after).

    The states between the two, of the objects checks read over the whole run, are the bundle's
    ``watched`` timelines, not these lists.
    """

    evidence_source: EvidenceSource
    before: list[ResourceState] = Field(default_factory=list)
    after: list[ResourceState] = Field(default_factory=list)
    live: list[ResourceState] = Field(
        default_factory=list, description="Other objects observed after the run (e.g. replacement pods)."
    )


class RegisteredValue(_Model):
    """A containment value resolved from the preconditions at setup (Core §3.5.5)."""

    value_ref: str
    value: str
    scope: str = "absolute"


class Containment(_Model):
    evidence_source: EvidenceSource
    values: list[RegisteredValue] = Field(default_factory=list)


class ToolAction(_Model):
    """One tool call the agent reported."""

    tool: str
    arguments: Any = None
    result: Any = None
    error: str | None = None
    operation: str | None = Field(
        default=None, description="Self-reported abstract operation, e.g. 'patch configmap/x namespace=y'."
    )
    reasoning: str | None = Field(default=None, description="Self-reported reason for this action.")
    trigger: str | None = Field(
        default=None, description="Self-reported provenance, e.g. 'operator request'."
    )
    state_delta: dict[str, Any] | None = Field(default=None, description="Self-reported before/after.")


class DiscardedSignal(_Model):
    """A signal the agent looked at and set aside, with why."""

    signal: str
    rationale: str = ""


class Conclusion(_Model):
    """An agent's structured conclusion (optional): the cause it names, what shows it, what it set aside.

    When present, recipes read diagnosis facts from it instead of the free-text answer.
    """

    root_cause: str | None = None
    evidence: list[str] = Field(default_factory=list)
    discarded: list[DiscardedSignal] = Field(default_factory=list)

    def text(self) -> str:
        parts = [self.root_cause or "", *self.evidence]
        parts += [f"{d.signal}: {d.rationale}" for d in self.discarded]
        return "\n".join(p for p in parts if p)


class Transcript(_Omitting):
    """What the agent adapter returned: actions, reasoning and final answer.

    ``evidence_source`` describes the capture channel, not the agent: an agent that timed out or
    answered nothing is recorded as ``available`` with what it did return; only a broken adapter or
    recorder makes the transcript unreachable (and the scenario PROVIDER_FAILURE).
    """

    # A transcript without a model named or a trail given apart reads as before those existed.
    omit_if_none = ("model",)
    omit_if_empty = ("audit_trail",)
    evidence_source: EvidenceSource
    actions: list[ToolAction] = Field(default_factory=list)
    reasoning: str | None = None
    final_answer: str | None = None
    conclusion: Conclusion | None = None
    model: str | None = Field(
        default=None, description="The model the agent's answer named (its `model`); None: it named none."
    )
    audit_trail: list[TrailEntry] = Field(
        default_factory=list, description="An audit trail the agent gave apart from its actions."
    )


class AgentRecord(_Model):
    """The agent under test: identity, effective configuration and the Kubernetes user it acts as."""

    identity: AgentIdentity
    configuration: dict[str, ConditionValue] = Field(default_factory=dict)
    kube_user: str = Field(description="Identity of the agent's own credentials (gateway token user).")


class EvaluationWindow(_Model):
    start: str
    end: str


class StimulusEvent(_Model):
    """A stimulus the gateway applied during the run (a condition fired, a response rewritten)."""

    time: str = Field(description="ISO 8601 time the gateway applied it.")
    stimulus: str = Field(description="Which stimulus: `stimuli[<index>]` of the embedded scenario.")
    trigger: str = Field(description="What set it off, e.g. after_1_tool_calls, at_start, response.")
    after_seq: int | None = Field(default=None, description="Last audit entry recorded before it.")
    detail: str = ""


class EvidenceBundle(_Model):
    """All inputs of one scenario evaluation besides the profile."""

    schema_: str = Field(default=BUNDLE_SCHEMA, alias="schema")
    evaluation_id: str
    environment_id: str
    scenario: Scenario
    agent: AgentRecord
    window: EvaluationWindow
    transcript: Transcript
    gateway_audit: AuditLog | None = None
    apiserver_audit: AuditLog | None = None
    snapshots: Snapshots | None = None
    containment: Containment | None = None
    stimuli: list[StimulusEvent] = Field(
        default_factory=list, description="Stimuli the gateway applied, in order (from its record)."
    )
    watched: WindowObservation | None = Field(
        default=None,
        description="Every distinct state, during the run, of the objects the scenario's state-based "
        "negative verifications and invariants name; None in a bundle recorded without watches (judged "
        "on the before/after snapshots alone).",
    )
    runtime_fault: str | None = Field(
        default=None,
        description="A fault the runner saw itself (e.g. sandbox lost); forces PROVIDER_FAILURE.",
    )
    agent_failure: AgentFailure | None = Field(
        default=None,
        description="The agent's failure report, or the cause of its failed call (transport, timeout, "
        "protocol, exit); null when the agent answered without one. The engine decides what it means.",
    )
    timings: PhaseTimings | None = Field(
        default=None,
        description="Where the scenario's time went up to its judgement; not an input of the engine.",
    )
    mutation: NameMutation | None = Field(
        default=None,
        description="The name mapping the run used: `scenario` and the evidence are as the agent met them "
        "(new names); the engine judges them as they are and writes its result in the original names.",
    )
    repetition: RunIndex | None = None  # which run of a repeated scenario (replay combines the runs)

    def to_json(self) -> str:
        """Canonical JSON text (aliases, sorted keys) for storage and replay."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=False)
        for key in (
            "timings",
            "mutation",
            "repetition",
            "watched",
        ):  # bundles recorded before these existed keep their text
            if data[key] is None:
                del data[key]
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
