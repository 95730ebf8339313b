"""`rollout undo` and `rollout status` as kubectl computes them, over the environment's door.

Undo (Deployments): the ReplicaSets the Deployment controls carry `deployment.kubernetes.io/revision`;
the wanted one (the given revision, else the one before the current) gives its pod template back to the
Deployment by a JSON patch, as kubectl does. Status reads the workload and, while its rollout is not
done, follows one watch of it until done or the timeout, with kubectl's words for each state.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Protocol

from oasis_operator.gateway.mcp.door import DoorClient, ToolCallError
from oasis_operator.gateway.mcp.resources import ApiResource, Discovery


class KubeTools(Protocol):
    """What rollouts use of the environment's Kubernetes tools (`kube_tools.KubeTools`)."""

    door: DoorClient
    discovery: Discovery

    async def target(
        self, resource: str, name: str = "", *, need_name: bool = True
    ) -> tuple[ApiResource, str]: ...

    def namespace(self, resource: ApiResource, namespace: str | None) -> str | None: ...

    async def read(self, resource: ApiResource, name: str, namespace: str | None) -> dict[str, Any]: ...

    async def items(
        self, resource: ApiResource, namespace: str | None, query: dict[str, str]
    ) -> list[dict[str, Any]]: ...


REVISION = "deployment.kubernetes.io/revision"
# Annotations kubectl keeps from the Deployment rather than copying from the ReplicaSet on undo.
KEPT_ANNOTATIONS = frozenset(
    {
        REVISION,
        "deployment.kubernetes.io/revision-history",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "kubectl.kubernetes.io/last-applied-configuration",
    }
)
MAX_WAIT = 300


def rollout_state(obj: dict[str, Any]) -> tuple[bool, str]:
    """(done, message) of a Deployment, StatefulSet or DaemonSet, in kubectl's words."""
    kind = obj.get("kind", "")
    name = obj.get("metadata", {}).get("name", "")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if int(obj.get("metadata", {}).get("generation", 0)) > int(status.get("observedGeneration", 0)):
        return False, f"Waiting for {kind.lower()} spec update to be observed..."
    if kind == "Deployment":
        for cond in status.get("conditions") or []:
            if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
                raise ToolCallError(f'deployment "{name}" exceeded its progress deadline')
        want = int(spec.get("replicas", 1))
        updated = int(status.get("updatedReplicas", 0))
        total, available = int(status.get("replicas", 0)), int(status.get("availableReplicas", 0))
        prefix = f'Waiting for deployment "{name}" rollout to finish: '
        if updated < want:
            return False, prefix + f"{updated} out of {want} new replicas have been updated..."
        if total > updated:
            return False, prefix + f"{total - updated} old replicas are pending termination..."
        if available < updated:
            return False, prefix + f"{available} of {updated} updated replicas are available..."
        return True, f'deployment "{name}" successfully rolled out'
    if kind == "StatefulSet":
        want, ready = int(spec.get("replicas", 1)), int(status.get("readyReplicas", 0))
        if ready < want:
            return False, f"Waiting for {want - ready} pods to be ready..."
        return (
            True,
            f"statefulset rolling update complete {ready} pods at revision {status.get('updateRevision')}...",
        )
    if kind == "DaemonSet":
        want, ready = int(status.get("desiredNumberScheduled", 0)), int(status.get("numberAvailable", 0))
        if ready < want:
            waiting = f'Waiting for daemon set "{name}" rollout to finish: '
            return False, waiting + f"{ready} of {want} updated pods are available..."
        return True, f'daemon set "{name}" successfully rolled out'
    raise ToolCallError(f"no status of a rollout for a {kind or 'resource of this type'}")


class RolloutTools:
    """`rollout undo` and `rollout status` of one environment."""

    def __init__(self, kube: KubeTools) -> None:
        self.kube = kube

    async def undo(
        self, resource: str, name: str = "", namespace: str | None = None, to_revision: int = 0
    ) -> str:
        """Roll a Deployment back to an earlier revision (`kubectl rollout undo [--to-revision=N]`)."""
        api, obj = await self.kube.target(resource, name)
        if api.kind != "Deployment":
            raise ToolCallError(f"rollout undo over MCP supports Deployments, not a {api.kind}")
        ns = self.kube.namespace(api, namespace)
        deployment = await self.kube.read(api, obj, ns)
        uid = deployment["metadata"].get("uid")
        labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        replicasets = await self.kube.discovery.resolve("replicasets.apps")
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        owned = [
            rs for rs in await self.kube.items(replicasets, ns, {"labelSelector": selector})
            if any(ref.get("uid") == uid for ref in rs["metadata"].get("ownerReferences") or [])
        ]  # fmt: skip
        by_revision = {int((rs["metadata"].get("annotations") or {}).get(REVISION, 0)): rs for rs in owned}
        current = int(
            (deployment["metadata"].get("annotations") or {}).get(REVISION, 0) or max(by_revision, default=0)
        )
        if to_revision:
            wanted = by_revision.get(to_revision)
            if wanted is None:
                raise ToolCallError(f"unable to find the specified revision {to_revision}")
        else:
            older = sorted(r for r in by_revision if r and r < current)
            if not older:
                raise ToolCallError(f'no rollout history found for deployment "{obj}"')
            wanted = by_revision[older[-1]]
        template = json.loads(json.dumps(wanted["spec"]["template"]))
        (template.get("metadata") or {}).get("labels", {}).pop("pod-template-hash", None)
        if template == deployment["spec"]["template"]:
            return f"deployment.apps/{obj} skipped rollback (current template already matches revision)"
        annotations = {
            k: v
            for k, v in (deployment["metadata"].get("annotations") or {}).items()
            if k in KEPT_ANNOTATIONS
        }
        annotations |= {
            k: v
            for k, v in (wanted["metadata"].get("annotations") or {}).items()
            if k not in KEPT_ANNOTATIONS
        }
        patch = [
            {"op": "replace", "path": "/spec/template", "value": template},
            {"op": "replace", "path": "/metadata/annotations", "value": annotations},
        ]
        answer = await self.kube.door.request(
            "PATCH", api.path(ns, obj), None, patch, "application/json-patch+json"
        )
        answer.raise_for_status(f"rollback of deployment.apps/{obj} failed")
        return f"deployment.apps/{obj} rolled back"

    async def status(
        self, resource: str, name: str = "", namespace: str | None = None, timeout_seconds: int = 30
    ) -> str:
        """Whether a workload's rollout is done, waiting up to `timeout_seconds` (`rollout status`)."""
        api, obj = await self.kube.target(resource, name)
        ns = self.kube.namespace(api, namespace)
        current = await self.kube.read(api, obj, ns)
        done, message = rollout_state({"kind": api.kind, **current})
        seen = [message]
        wait = max(0, min(int(timeout_seconds), MAX_WAIT))
        deadline = time.monotonic() + wait
        while not done and time.monotonic() < deadline:
            query = {
                "fieldSelector": f"metadata.name={obj}",
                "watch": "true",
                "resourceVersion": str(current["metadata"].get("resourceVersion", "")),
                "timeoutSeconds": str(max(1, int(deadline - time.monotonic()))),
            }
            async with self.kube.door.stream(api.path(ns), query) as response:
                if response.status != 200:
                    break
                try:
                    async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                        async for line in response.content:
                            event = json.loads(line or b"{}")
                            if event.get("type") in {"ADDED", "MODIFIED"} and event.get("object"):
                                current = event["object"]
                                done, message = rollout_state({"kind": api.kind, **current})
                                if message != seen[-1]:
                                    seen.append(message)
                                if done:
                                    break
                except TimeoutError:
                    break
        if not done:
            raise ToolCallError("\n".join([*seen, f"error: timed out waiting for the condition ({wait}s)"]))
        return "\n".join(seen)
