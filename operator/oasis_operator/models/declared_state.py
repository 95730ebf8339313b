"""What a scenario may declare under `preconditions.environment.state`, one model per kind.

The SI profile leaves the shape of a state entry to the provider; this module is that shape. The profile
validator, the twin builder, the engine and the gateway's APIs all read it, so a key the twin would not
understand is refused when the Scenario is validated, with the field path and what to write instead,
rather than when a sandbox is being built (where it would look like the provider's fault).

Kubernetes kinds are strict (an unknown key is an error). Kinds with no Kubernetes object (metrics, logs,
traces, ...) are served by the gateway; their known keys are typed and other keys (metric series names)
are kept as given.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oasis_operator.models.declared_values import (
    Age,
    CpuUse,
    Env,
    KindModel,
    Mapping,
    ObjectRef,
    Percent,
    PodCount,
    PodSetRef,
    PodState,
    Quantity,
    Scalar,
    StrMap,
    parse_age,
)
from oasis_operator.models.declared_workloads import (
    Container as Container,  # noqa: PLC0414 (re-exported for the modules that import it from here)
)
from oasis_operator.models.declared_workloads import (
    CronJobState,
    DaemonSetState,
    JobState,
    PodTemplateState,
    StatefulSetState,
)
from oasis_operator.models.served_state import (
    AlertState,
    DashboardState,
    DatabaseMigrationState,
    LogsState,
    MetricsState,
    RunbookState,
    TracesState,
)


class NamespaceState(KindModel):
    zone: str | None = None
    labels: StrMap | None = None
    annotations: StrMap | None = None
    deployments: list[str] | None = None
    resource_quotas: list[str] | None = None


class DeploymentState(PodTemplateState):
    """A Deployment; its pod vocabulary (image, containers, env, resources, volumes, ...) is the shared
    `PodTemplateState`."""

    status: PodState | None = None  # absent: running
    replicas: int | None = Field(default=None, ge=0)
    last_deploy: Age | None = None
    current_image: str | None = None
    previous_image: str | None = None
    memory_usage: Quantity | None = None
    traffic_weight: Quantity | None = None
    injected_failure: str | None = None
    pdb: str | None = None
    hpa: str | None = None
    update_strategy: Literal["RollingUpdate", "Recreate"] | None = None
    conditions: list[Mapping] | None = None
    owner_team: str | None = None
    managed_by: str | None = None

    @field_validator("last_deploy")
    @classmethod
    def _age_reads(cls, value: Age | None) -> Age | None:
        if value is not None:
            parse_age(value)
        return value


class PodStateEntry(KindModel):
    node: str | None = None
    cpu_usage: CpuUse | None = None
    status: PodState | None = None
    restarts: int | None = Field(default=None, ge=0)
    last_log: str | None = None
    env: Env | None = None
    labels: StrMap | None = None


class ConfigMapState(KindModel):
    data: StrMap | None = None
    annotations: StrMap | None = None


class SecretState(KindModel):
    type: str | None = None
    data: StrMap | None = None


class ServicePort(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    port: int = Field(ge=1, le=65535)


class ServiceState(KindModel):
    port: int | None = Field(default=None, ge=1, le=65535)
    ports: list[ServicePort] | None = None
    selector: StrMap | None = None
    endpoints: list[Any] | None = None

    @model_validator(mode="after")
    def _one_port_form(self) -> ServiceState:
        if self.port is not None and self.ports:
            raise ValueError("give either `port` or `ports`, not both")
        return self


class IngressState(KindModel):
    status: str | None = None
    backend: str | None = None
    host: str | None = None


class NetworkPolicyState(KindModel):
    spec: Mapping | None = None


class HpaState(KindModel):
    target: PodSetRef | None = None
    # At least 1: scaling to zero needs an Object or External metric, which a declared HPA does not have.
    min_replicas: int | None = Field(default=None, ge=1)
    max_replicas: int | None = Field(default=None, ge=1)
    target_cpu_utilization: int | None = Field(default=None, ge=1)  # percent of the pods' CPU requests
    current_status: str | None = None
    target_replicas: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> HpaState:
        low = 1 if self.min_replicas is None else self.min_replicas
        high = 10 if self.max_replicas is None else self.max_replicas
        if low > high:
            raise ValueError(
                f"min_replicas ({low}) is above max_replicas ({high}); lower one or raise the other"
            )
        if self.target is None:
            raise ValueError(
                "an hpa needs target: deployment/<name> or statefulset/<name> (the workload it scales)"
            )
        return self


class PvcState(KindModel):
    storage: Quantity | None = None
    bound: bool | None = None


class NodeState(KindModel):
    cpu_usage: Percent | None = None
    memory_pressure: bool | None = None
    conditions: list[Mapping] | None = None


class NodesState(KindModel):
    count: int | None = Field(default=None, ge=0)
    allocatable_cpu: str | None = None
    allocatable_cpu_per_node: Quantity | None = None
    allocatable_memory_per_node: Quantity | None = None
    current_utilization: Percent | None = None


class DeclaredEvent(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    object: ObjectRef
    age: Age | None = None
    type: Scalar | None = None
    reason: Scalar | None = None
    message: Scalar | None = None

    @field_validator("age")
    @classmethod
    def _age_reads(cls, value: Age | None) -> Age | None:
        if value is not None:
            parse_age(value)
        return value


class EventsState(KindModel):
    recent: list[DeclaredEvent] | None = None


class GitOpsApplicationState(KindModel):
    sync_status: str | None = None
    source_repo: str | None = None
    source_path: str | None = None


class PdbState(KindModel):
    target: PodSetRef | None = None  # its pods are those labelled app=<name>
    selector: StrMap | None = None
    min_available: PodCount | None = None
    max_unavailable: PodCount | None = None

    @model_validator(mode="after")
    def _rules(self) -> PdbState:
        if not self.target and not self.selector:
            raise ValueError("a pdb needs target: deployment/<name> or statefulset/<name>, or a selector")
        if self.min_available is not None and self.max_unavailable is not None:
            raise ValueError(
                "give either `min_available` or `max_unavailable`, not both (Kubernetes allows one)"
            )
        return self


class ServiceAccountState(KindModel):
    pass


class RoleState(KindModel):
    rules: list[Mapping] | None = None


class RoleBindingState(KindModel):
    role: str | None = None
    subjects: list[Mapping] | None = None  # Kubernetes subjects: {kind, name[, namespace]}


# The one table of what a scenario may declare: kind as written in `resource: <kind>/<name>` → model.
KINDS: dict[str, type[KindModel]] = {
    "namespace": NamespaceState,
    "deployment": DeploymentState,
    "pod": PodStateEntry,
    "configmap": ConfigMapState,
    "secret": SecretState,
    "service": ServiceState,
    "ingress": IngressState,
    "networkpolicy": NetworkPolicyState,
    "hpa": HpaState,
    "pvc": PvcState,
    "node": NodeState,
    "nodes": NodesState,
    "events": EventsState,
    "gitops-application": GitOpsApplicationState,
    "pdb": PdbState,
    "statefulset": StatefulSetState,
    "daemonset": DaemonSetState,
    "job": JobState,
    "cronjob": CronJobState,
    "serviceaccount": ServiceAccountState,
    "role": RoleState,
    "rolebinding": RoleBindingState,
    "logs": LogsState,
    "metrics": MetricsState,
    "traces": TracesState,
    "dashboard": DashboardState,
    "alert": AlertState,
    "runbook": RunbookState,
    "database-migration": DatabaseMigrationState,
}
# State with no Kubernetes object: kept with the environment and served by the gateway.
FIXTURE_KINDS = frozenset(kind for kind, model in KINDS.items() if model.served)
# Kinds written without a name (`resource: nodes` describes the whole node pool).
UNNAMED_KINDS = frozenset({"nodes"})
# Fields that describe observability or dynamics of a deployment rather than the object.
DEPLOYMENT_FIXTURE_KEYS = frozenset({"memory_usage", "traffic_weight", "injected_failure"})

DeclaredKind = KindModel
