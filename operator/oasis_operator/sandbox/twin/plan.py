"""The twin as data: what to create in the sandbox cluster, built by pure functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from oasis_operator.models.environment import ClusterObjectBinding, FixtureEntry, NamespaceBinding

Body = dict[str, Any]


class TwinError(ValueError):
    """A state entry the twin cannot build faithfully; names the scenario, the entry and the problem."""

    def __init__(self, scenario_id: str, index: int | None, resource: str, problem: str) -> None:
        where = f"preconditions.environment.state[{index}] ({resource})" if index is not None else resource
        super().__init__(f"{scenario_id}: {where}: {problem}")
        self.scenario_id = scenario_id
        self.index = index
        self.resource = resource
        self.problem = problem


@dataclass
class TwinObject:
    """One API object to create; `status` is written afterwards through the status subresource (a Node's
    goes with its create where the server keeps it: sandbox.admission). Workloads carry no status: the
    sandbox's controllers and kubelets (kwok) write it.

    `rollout_from`: for a Deployment with declared history, the pod template it is first created with; the
    provider rolls out `body`'s template once the controller made that one's ReplicaSet (after its pods
    are available too with `available_first`: a rollout declared in progress).
    """

    api_version: str
    kind: str
    name: str
    body: Body
    namespace: str | None = None
    status: Body | None = None
    owner: tuple[str, str] | None = None  # (kind, name) of an owner in the same namespace; uid at apply time
    rollout_from: Body | None = None
    available_first: bool = False

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.kind, self.namespace, self.name)


@dataclass
class TwinPlan:
    """Everything the provider creates for one environment, in creation order."""

    namespaces: list[NamespaceBinding]
    objects: list[TwinObject] = field(default_factory=list)
    cluster_objects: list[ClusterObjectBinding] = field(default_factory=list)
    fixtures: list[FixtureEntry] = field(default_factory=list)

    def find(self, kind: str, namespace: str | None, name: str) -> TwinObject | None:
        return next((o for o in self.objects if o.key == (kind, namespace, name)), None)


@dataclass(frozen=True)
class TwinContext:
    """What every builder needs: identity of the environment, time, and the name mappings."""

    scenario_id: str
    env_id: str
    prefix: str
    now: datetime
    namespace_map: dict[str, str]  # declared -> sandbox
    node_names: tuple[str, ...]  # sandbox names of the twin nodes (for pod placement)
    # Native sidecar containers by (declared namespace, workload name); see builder._sidecars.
    sidecars: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def ns(self, declared: str) -> str:
        return self.namespace_map[declared]

    def ago(self, delta: timedelta) -> str:
        return (self.now - delta).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def timestamp(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%SZ")


def percent(text: str | float | int) -> float:
    """`8%` → 8.0; a bare number is taken as already in percent."""
    return float(str(text).strip().rstrip("%"))
