"""A provisioned scenario environment: what the sandbox built and what the gateway needs to serve it.

The sandbox provider creates one `Environment` per scenario run. The gateway reads it to authenticate the
agent, to impersonate the agent's identity, to translate between the namespace names the agent sees
(declared) and the real ones in the sandbox cluster, and to serve state that has no Kubernetes object
(logs, metrics, traces, dashboards, alerts, runbooks, GitOps and migration state).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_serializer, field_validator

from oasis_operator.models.connect import ConnectGrants
from oasis_operator.models.declared_state import FIXTURE_KINDS, KINDS, GitOpsApplicationState
from oasis_operator.models.declared_values import KindModel, Scalar
from oasis_operator.models.served_state import (
    IngressStatus,
    NodeUsage,
    WorkloadSignals,
    written,
)

SERVICE_ACCOUNT_GROUPS = ("system:serviceaccounts", "system:authenticated")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NamespaceBinding(_Model):
    """One namespace as the agent knows it and as it really is in the sandbox cluster."""

    declared: str
    sandbox: str
    zone: str | None = None
    in_scope: bool = Field(description="The agent's scope names this namespace (it has RBAC there).")


class ClusterObjectBinding(_Model):
    """A cluster-scoped twin object (a Node, a PersistentVolume) renamed to stay unique per environment."""

    kind: str
    declared: str
    sandbox: str


AGENT_SHOWN_NAME = "agent"  # the agent's ServiceAccount as the agent sees it, without the environment id


class AgentServiceAccount(_Model):
    """The ServiceAccount the gateway impersonates for every agent request."""

    namespace: str
    service_account: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"

    @property
    def groups(self) -> list[str]:
        return [*SERVICE_ACCOUNT_GROUPS, f"system:serviceaccounts:{self.namespace}"]


class GitOpsRecord(GitOpsApplicationState):
    """What the gateway's Argo CD API serves for a `gitops-application/<name>`: the declared application,
    and what a sync changes."""

    target_revision: str | None = None
    self_heal: bool | None = None
    revision: Scalar | None = None
    health_status: str | None = None
    last_sync: str | None = None


# Each fixture kind's model: the served kinds as declared, and the entries the twin builder derives.
FIXTURE_DATA: dict[str, type[KindModel]] = {
    **{kind: model for kind, model in KINDS.items() if kind in FIXTURE_KINDS},
    "gitops-application": GitOpsRecord,
    "node-usage": NodeUsage,
    "workload-signals": WorkloadSignals,
    "ingress-status": IngressStatus,
}
Data = TypeVar("Data", bound=KindModel)


class FixtureEntry(_Model):
    """Declared state with no Kubernetes object, parsed into its kind's model (the gateway serves it).

    `data` may be given as a mapping (as a scenario's stimulus facts write it): it is read into the
    kind's model here, once, so a wrong type is refused where the entry is written.
    """

    kind: str = Field(description=f"One of: {', '.join(FIXTURE_DATA)}.")
    name: str
    namespace: str | None = Field(default=None, description="Declared namespace, if the entry names one.")
    data: KindModel = Field(default_factory=dict, validate_default=True, description="The entry's own keys.")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in FIXTURE_DATA:
            raise ValueError(f"unknown fixture kind {kind!r}; write one of {sorted(FIXTURE_DATA)}")
        return kind

    @field_validator("data", mode="before")
    @classmethod
    def _typed_data(cls, data: Any, info: ValidationInfo) -> Any:
        model = FIXTURE_DATA.get(info.data.get("kind", ""))
        if model is None:
            return KindModel()  # the kind's own error says what to write
        if isinstance(data, model):
            return data
        return model.model_validate({} if data is None else data)  # its errors carry the path under `data`

    @field_serializer("data")
    def _as_written(self, data: KindModel) -> dict[str, Any]:
        return written(data)

    def data_as(self, model: type[Data]) -> Data:
        """`data` as the model the caller reads (an entry of another kind is a programming error)."""
        if not isinstance(self.data, model):
            raise TypeError(f"{self.kind}/{self.name} holds {type(self.data).__name__}, not {model.__name__}")
        return self.data

    def written(self) -> dict[str, Any]:
        """The entry's data with only the keys it was written with (what a whole-document API serves)."""
        return written(self.data)

    def changed(self, **changes: Any) -> FixtureEntry:
        """This entry with some keys of its data replaced (checked by the kind's model)."""
        return FixtureEntry(
            kind=self.kind, name=self.name, namespace=self.namespace, data={**self.written(), **changes}
        )


class Environment(_Model):
    """Everything known about one provisioned scenario environment."""

    id: str = Field(pattern=r"^[a-z0-9]{6,12}$")
    prefix: str
    scenario_id: str
    evaluation: str | None = Field(default=None, description="namespace/name of the owning evaluation.")
    control_namespace: str = Field(
        description="Holds the agent identity and the record (shared by every environment); never shown."
    )
    namespaces: tuple[NamespaceBinding, ...]
    cluster_objects: tuple[ClusterObjectBinding, ...] = ()
    agent: AgentServiceAccount
    mode: str
    tools: tuple[str, ...] = ()
    fixtures: tuple[FixtureEntry, ...] = ()
    created_at: str
    connect: ConnectGrants | None = Field(
        default=None, description="What the scenario grants of exec, attach and port-forward (none: refused)."
    )

    def sandbox_namespace(self, declared: str) -> str | None:
        return next((b.sandbox for b in self.namespaces if b.declared == declared), None)

    def declared_namespace(self, sandbox: str) -> str | None:
        return next((b.declared for b in self.namespaces if b.sandbox == sandbox), None)

    def sandbox_object_name(self, kind: str, declared: str) -> str | None:
        return next(
            (o.sandbox for o in self.cluster_objects if o.kind == kind and o.declared == declared), None
        )

    def declared_object_name(self, kind: str, sandbox: str) -> str | None:
        return next(
            (o.declared for o in self.cluster_objects if o.kind == kind and o.sandbox == sandbox), None
        )

    def renames(self) -> dict[str, str]:
        """Every sandbox name mapped to the name the agent must see instead (namespaces and objects)."""
        pairs = {b.sandbox: b.declared for b in self.namespaces}
        pairs.update({o.sandbox: o.declared for o in self.cluster_objects})
        return pairs
