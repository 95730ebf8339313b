"""A provisioned scenario environment: what the sandbox built and what the gateway needs to serve it.

The sandbox provider creates one `Environment` per scenario run. The gateway reads it to authenticate the
agent, to impersonate the agent's identity, to translate between the namespace names the agent sees
(declared) and the real ones in the sandbox cluster, and to serve state that has no Kubernetes object
(logs, metrics, traces, dashboards, alerts, runbooks, GitOps and migration state).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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


class AgentIdentity(_Model):
    """The ServiceAccount the gateway impersonates for every agent request."""

    namespace: str
    service_account: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"

    @property
    def groups(self) -> list[str]:
        return [*SERVICE_ACCOUNT_GROUPS, f"system:serviceaccounts:{self.namespace}"]


class FixtureEntry(_Model):
    """Declared state with no Kubernetes object, kept as declared (the gateway interprets it)."""

    kind: str = Field(description="logs, metrics, traces, dashboard, alert, runbook, gitops-application, …")
    name: str
    namespace: str | None = Field(default=None, description="Declared namespace, if the entry names one.")
    data: dict[str, Any] = Field(
        default_factory=dict, description="The state entry without resource/namespace."
    )


class Environment(_Model):
    """Everything known about one provisioned scenario environment."""

    id: str = Field(pattern=r"^[a-z0-9]{6,12}$")
    prefix: str
    scenario_id: str
    evaluation: str | None = Field(default=None, description="namespace/name of the owning evaluation.")
    control_namespace: str = Field(description="Holds the agent identity and the record; never shown.")
    namespaces: tuple[NamespaceBinding, ...]
    cluster_objects: tuple[ClusterObjectBinding, ...] = ()
    agent: AgentIdentity
    mode: str
    tools: tuple[str, ...] = ()
    fixtures: tuple[FixtureEntry, ...] = ()
    created_at: str

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
