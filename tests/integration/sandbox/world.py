"""A provisioned sandbox on the real local plane, read and changed as an agent and its cluster would.

The tests of the sandbox's world (`test_world_*.py`) provision a small declared state with the real
provider, read what the controllers, the scheduler and kwok made of it, act with kubectl as the agent's
identity (`--as`: its RBAC decides) or as the platform, and wait, bounded, for the cluster's answer. A
wait that runs out fails naming what it waited for and what the pods showed last.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.provider import SandboxProvider, SandboxRecord
from tests.cluster_fixtures import Cluster
from tests.unit.sandbox.test_twin import custom

Body = dict[str, Any]
MERGE = "application/merge-patch+json"
SHOP = "shop"
# The declared namespace every world test puts its workloads in.
NAMESPACE: dict[str, Any] = {"resource": f"namespace/{SHOP}", "zone": "zone-a"}
WAIT = 60.0  # seconds: a rollout, a crash, a reschedule take a few; a crash loop's back-off up to ~25


@dataclass(frozen=True)
class World:
    """One provisioned environment and the ways a test reads and changes it."""

    cluster: Cluster
    provider: SandboxProvider
    record: SandboxRecord

    @property
    def api(self) -> ApiClient:
        return self.provider.api

    def ns(self, declared: str = SHOP) -> str:
        found = self.record.environment.sandbox_namespace(declared)
        assert found is not None, f"no namespace {declared} in the environment"
        return found

    def node(self, declared: str) -> str:
        """The sandbox name of a declared node (`node-1`)."""
        for obj in self.record.environment.cluster_objects:
            if obj.kind == "Node" and obj.declared == declared:
                return obj.sandbox
        raise AssertionError(f"no node {declared} in the environment")

    def nodes(self) -> list[str]:
        return sorted(o.sandbox for o in self.record.environment.cluster_objects if o.kind == "Node")

    # --- acting -----------------------------------------------------------------------------------
    def agent(self, *args: str, declared: str = SHOP, check: bool = True) -> subprocess.CompletedProcess[str]:
        """kubectl as the agent's identity in a declared namespace (the fix an agent would make)."""
        who = self.record.environment.agent.username
        return self.cluster.kubectl("-n", self.ns(declared), "--as", who, *args, check=check)

    def platform(self, *args: str) -> subprocess.CompletedProcess[str]:
        """kubectl as the cluster's administrator (what the agent may not do: cordon, a kubelet's report)."""
        return self.cluster.kubectl(*args)

    def patch_status(self, kind: str, name: str, status: Body, declared: str | None = SHOP) -> None:
        namespace = self.ns(declared) if declared is not None else None
        path = resource_path(kind, namespace, name) + "/status"
        request(
            self.api, "PATCH", path, {"status": status}, content_type="application/strategic-merge-patch+json"
        )

    # --- reading ----------------------------------------------------------------------------------
    def get(self, kind: str, name: str, declared: str | None = SHOP) -> Body:
        namespace = self.ns(declared) if declared is not None else None
        found: Body = request(self.api, "GET", resource_path(kind, namespace, name))
        return found

    def pods(self, app: str | None = None, declared: str = SHOP) -> list[Body]:
        """The namespace's pods (of one workload: `app=<name>`), those being deleted left out."""
        query = {"labelSelector": f"app={app}"} if app else {}
        items: list[Body] = request(self.api, "GET", resource_path("Pod", self.ns(declared)), query=query)[
            "items"
        ]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def job_pods(self, job: str, declared: str = SHOP) -> list[Body]:
        query = {"labelSelector": f"job-name={job}"}
        items: list[Body] = request(self.api, "GET", resource_path("Pod", self.ns(declared)), query=query)[
            "items"
        ]
        return items

    def events(self, name: str, declared: str = SHOP) -> list[Body]:
        """Events about the object `name` in a declared namespace (every writer's)."""
        query = {"fieldSelector": f"involvedObject.name={name}"}
        items: list[Body] = request(self.api, "GET", resource_path("Event", self.ns(declared)), query=query)[
            "items"
        ]
        return items

    def reasons(self, name: str, declared: str = SHOP) -> set[str]:
        return {str(e.get("reason")) for e in self.events(name, declared)}

    def show(self, app: str | None = None, declared: str = SHOP) -> str:
        """What the pods show, for a failure message."""
        return "; ".join(describe(p) for p in self.pods(app, declared)) or "no pods"


@contextmanager
def provisioned(
    cluster: Cluster, api: ApiClient, state: list[Body], scope: list[str] | None = None, prefix: str = "wf"
) -> Iterator[World]:
    """The declared `state` provisioned (its symptoms present, as the provider waits for them), torn
    down after (not awaited: the plane is shared)."""
    provider = SandboxProvider(api, prefix=prefix)
    record = provider.provision(custom(state, scope=scope or [SHOP]), evaluation="tests/world")
    try:
        yield World(cluster, provider, record)
    finally:
        provider.teardown(record.environment.id, wait=False)


# --- pods, as a kubelet reports them -------------------------------------------------------------------
def main(pod: Body) -> Body:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return dict(statuses[0]) if statuses else {}


def waiting(pod: Body) -> str | None:
    reason = ((main(pod).get("state") or {}).get("waiting") or {}).get("reason")
    return str(reason) if reason else None


def last_terminated(pod: Body) -> Body:
    return dict((main(pod).get("lastState") or {}).get("terminated") or {})


def condition(obj: Body, kind: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def ready(pod: Body) -> bool:
    return condition(pod, "Ready") == "True"


def restarts(pod: Body) -> int:
    return int(main(pod).get("restartCount") or 0)


def describe(pod: Body) -> str:
    status = pod.get("status") or {}
    inits = [
        f"init {s.get('name')}={((s.get('state') or {}).get('waiting') or {}).get('reason')}"
        for s in status.get("initContainerStatuses") or []
        if (s.get("state") or {}).get("waiting")
    ]
    parts = [
        str(status.get("phase")),
        "ready" if ready(pod) else "not ready",
        f"waiting={waiting(pod)}" if waiting(pod) else "",
        f"restarts={restarts(pod)}",
        f"node={pod['spec'].get('nodeName') or '-'}",
        *inits,
    ]
    return f"{pod['metadata']['name']}: {' '.join(p for p in parts if p)}"


def all_ready(pods: list[Body], count: int) -> bool:
    return len(pods) == count and all(ready(p) for p in pods)


def until(check: Callable[[], bool], what: str, seen: Callable[[], str], timeout: float = WAIT) -> None:
    """Poll `check` until it holds; fail with `what` was awaited and what `seen` says the world shows."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except ApiException as exc:
            if exc.status != 404:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(
                f"after {timeout:.0f}s still waiting for {what}; the cluster shows: {seen()}"
            )
        time.sleep(0.25)


def rollout_done(
    world: World, kind: str, name: str, replicas: int, declared: str = SHOP
) -> Callable[[], bool]:
    """The workload's controller saw its last change and all its replicas are updated and available."""

    def check() -> bool:
        live = world.get(kind, name, declared)
        status = live.get("status") or {}
        observed = status.get("observedGeneration", 0) >= live["metadata"]["generation"]
        counts = (
            status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0),
            status.get("replicas", 0),
        )
        return observed and counts == (replicas, replicas, replicas)

    return check


def kubectl_json(result: subprocess.CompletedProcess[str]) -> Body:
    loaded: Body = json.loads(result.stdout)
    return loaded
