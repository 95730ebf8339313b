"""What the sandbox's world still needs from us while an agent works, now that real controllers run it.

The controllers, the scheduler and kwok answer the agent's changes on their own. Two things are left:

* **The kubelet's read of a ConfigMap.** A container whose env references a ConfigMap key is started
  with the key's value; a workload declared crash-looping on a missing key (`faults.Cause.
  MISSING_CONFIG_KEY`) recovers when the key appears, and fails again if it goes. kwok's Stages select
  on the pod alone, so `WorldWatch` keeps that fault's Stage exactly while the key is missing: once the
  agent adds it, the container starts on its next try (the lifecycle's `pod-restart`) and stays up.
* **Settling.** Before the after-snapshot, the controllers are given a moment to observe the agent's
  last write (every Deployment, StatefulSet, DaemonSet and ReplicaSet of the environment at its
  `observedGeneration`), and a rollout the agent started is followed until it finishes or stops moving
  (what `kubectl rollout status` waits for), so the snapshot shows the cluster's answer to the agent's
  last change, not the moment after the request: a rollback is read with the earlier release's pods.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.faults import Cause, WorkloadFault, fault_stages, stage_name
from oasis_operator.sandbox.kwok import apply_stages, delete_stage
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider, SandboxRecord

log = logging.getLogger(__name__)
Body = dict[str, Any]
OBSERVED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
SETTLE_TIMEOUT = 5.0
ROLLOUT_TIMEOUT = 20.0  # the longest a rollout under way when the agent stops is followed
STALL = 2.0  # a rollout whose counters have not moved for this long is stuck, and read as it is


class WorldWatch:
    """One environment's ConfigMap-key faults and its settling (see the module docstring)."""

    def __init__(self, provider: SandboxProvider, record: SandboxRecord) -> None:
        self.provider = provider
        self.api = provider.api
        self.env = record.environment
        self.faults: list[WorkloadFault] = [
            f for f in record.faults if f.cause is Cause.MISSING_CONFIG_KEY and f.config_map and f.config_key
        ]
        # Whether each fault's Stage exists: provisioning created them all (the keys were missing).
        self._staged = {stage_name(self.env, f): True for f in self.faults}
        # The change mark (see `settle`) at which a pass last found nothing to do.
        self._settled_at: int | None = 0

    def settle(self, mark: int | None) -> list[str]:
        """`reconcile_once`, unless nothing can have changed since a pass last found nothing to do.

        `mark` counts what may have changed the sandbox so far (the gateway's record of the agent's
        writes and of the stimuli that fired; None when a write is still unanswered).
        """
        if mark is not None and mark == self._settled_at:
            return []
        actions = self.reconcile_once()
        self._settled_at = mark if not actions else None
        return actions

    def reconcile_once(self) -> list[str]:
        """Each missing-key fault's Stage made to follow its ConfigMap; returns what changed."""
        actions = []
        for fault in self.faults:
            name = stage_name(self.env, fault)
            missing = not self._key_present(fault)
            if missing and not self._staged[name]:
                apply_stages(self.api, fault_stages(self.env, fault, {ENV_LABEL: self.env.id}))
                actions.append(f"{fault.workload}: {fault.config_map} lacks {fault.config_key} again")
            elif not missing and self._staged[name]:
                delete_stage(self.api, name)
                actions.append(f"{fault.workload}: {fault.config_map} has {fault.config_key}")
            self._staged[name] = missing
        return actions

    def _key_present(self, fault: WorkloadFault) -> bool:
        namespace = self.env.sandbox_namespace(fault.namespace)
        if namespace is None:
            return False
        try:
            cm = request(self.api, "GET", resource_path("ConfigMap", namespace, fault.config_map))
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return fault.config_key in (cm.get("data") or {}) or fault.config_key in (cm.get("binaryData") or {})

    def quiesce(self, timeout: float = SETTLE_TIMEOUT, rollouts: float = ROLLOUT_TIMEOUT) -> bool:
        """Wait until the controllers observed every workload's last change (up to `timeout`) and the
        rollouts under way have finished or stopped moving (up to `rollouts` in all); False if either
        bound was reached (the snapshot is taken anyway: it shows what the cluster says)."""
        self.reconcile_once()
        start = time.monotonic()
        progress: tuple[Any, ...] | None = None
        moved_at = start
        while True:
            behind, under_way = self._behind()
            now = time.monotonic()
            if behind:
                if now - start > timeout:
                    log.info("controllers had not observed %s when the window closed", ", ".join(behind))
                    return False
            elif not under_way:
                return True
            else:
                if under_way != progress:
                    progress, moved_at = under_way, now
                elif now - moved_at > STALL:
                    return True  # stuck (new pods that never become ready): the snapshot shows it so
                if now - start > rollouts:
                    names = ", ".join(str(item[0]) for item in under_way)
                    log.info("rollouts still moving when the window closed: %s", names)
                    return False
            time.sleep(0.1)

    def _behind(self) -> tuple[list[str], tuple[Any, ...]]:
        """The workloads whose last change the controllers have not observed, and the progress of the
        rollouts under way (each one's counters, and the pods still terminating)."""
        behind: list[str] = []
        under_way: list[tuple[Any, ...]] = []
        for binding in self.env.namespaces:
            for kind in OBSERVED_KINDS:
                for item in request(self.api, "GET", resource_path(kind, binding.sandbox))["items"]:
                    meta, status = item["metadata"], item.get("status") or {}
                    label = f"{kind.lower()}/{meta['name']}"
                    if status.get("observedGeneration", 0) < meta.get("generation", 0):
                        behind.append(label)
                    elif rolling(kind, item):
                        under_way.append((label, *progress_of(status)))
            pods = request(self.api, "GET", resource_path("Pod", binding.sandbox))["items"]
            under_way += [
                (f"pod/{p['metadata']['name']}",) for p in pods if p["metadata"].get("deletionTimestamp")
            ]
        return behind, tuple(under_way)


def rolling(kind: str, workload: Body) -> bool:
    """Whether a workload the controllers have observed is still rolling out (or scaling): pods of an
    older template left, or fewer of the current one than it asks for. A paused Deployment and an
    `OnDelete` set roll nothing on their own."""
    spec, status = workload.get("spec") or {}, workload.get("status") or {}
    replicas = int(spec.get("replicas", 1))
    if kind == "Deployment":
        if spec.get("paused"):
            return False
        return int(status.get("updatedReplicas", 0)) < replicas or int(status.get("replicas", 0)) > replicas
    if kind == "StatefulSet":
        if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
            return int(status.get("replicas", 0)) != replicas
        revisions = status.get("updateRevision") != status.get("currentRevision")
        return revisions or int(status.get("replicas", 0)) != replicas
    if kind == "DaemonSet":
        if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
            return False
        wanted = int(status.get("desiredNumberScheduled", 0))
        return int(status.get("updatedNumberScheduled", 0)) < wanted
    return int(status.get("replicas", 0)) != replicas  # a ReplicaSet


def progress_of(status: Body) -> tuple[Any, ...]:
    """A workload's counters (its conditions' times move without progress)."""
    return tuple(sorted((k, v) for k, v in status.items() if isinstance(v, int | str)))
