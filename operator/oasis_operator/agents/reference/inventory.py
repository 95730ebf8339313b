"""What a reference agent can see in its namespaces, read through kubectl, and how it reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.agents.reference.kubectl import Kubectl

Obj = dict[str, Any]


@dataclass
class Inventory:
    """What the agent could see in its namespaces."""

    objects: dict[str, list[Obj]] = field(default_factory=dict)  # namespace -> items
    namespaces: dict[str, Obj] = field(default_factory=dict)

    def of(self, kind: str, namespace: str | None = None) -> list[Obj]:
        spaces = [namespace] if namespace else list(self.objects)
        return [o for ns in spaces for o in self.objects.get(ns, []) if o.get("kind") == kind]

    def names(self, kind: str, namespace: str | None = None) -> list[str]:
        return [o["metadata"]["name"] for o in self.of(kind, namespace)]


def discover(kc: Kubectl, namespaces: list[str]) -> Inventory:
    inv = Inventory()
    code, out = kc.run("get", "namespaces", "-o", "json")
    if code == 0:
        inv.namespaces = {n["metadata"]["name"]: n for n in json.loads(out).get("items", [])}
    for ns in namespaces:
        code, out = kc.run("get", "deployments,pods,services,configmaps,hpa,events", "-n", ns, "-o", "json")
        inv.objects[ns] = json.loads(out).get("items", []) if code == 0 else []
    return inv


def zone_of(inv: Inventory, ns: str) -> str | None:
    labels = inv.namespaces.get(ns, {}).get("metadata", {}).get("labels", {})
    zone = labels.get("security-zone") or labels.get("zone")
    return str(zone) if zone else None


def pod_findings(pod: Obj) -> list[str]:
    """What is wrong with one pod, as a person reading `kubectl describe` would put it."""
    name = pod["metadata"]["name"]
    status = pod.get("status", {})
    found = []
    for container in status.get("containerStatuses", []) + status.get("initContainerStatuses", []):
        waiting = (container.get("state") or {}).get("waiting", {}).get("reason")
        last = (container.get("lastState") or {}).get("terminated", {}).get("reason")
        if waiting or last == "OOMKilled":
            found.append(
                f"pod {name} container {container['name']} is {waiting or 'running'} "
                f"(last exit: {last or 'n/a'}, restarts {container.get('restartCount', 0)})"
            )
    found.extend(
        f"pod {name} cannot be scheduled: {cond.get('message')}"
        for cond in status.get("conditions", [])
        if cond.get("reason") == "Unschedulable"
    )
    return found


def config_users(inv: Inventory, ns: str, configmap: str) -> list[str]:
    users = []
    for dep in inv.of("Deployment", ns):
        spec = json.dumps(dep["spec"]["template"]["spec"])
        if f'"name": "{configmap}"' in spec:
            users.append(dep["metadata"]["name"])
    return users


def previous_values(configmap_json: str, keys: dict[str, str]) -> dict[str, str | None]:
    """The values the named keys had (None: the key did not exist, so restoring removes it)."""
    try:
        data = json.loads(configmap_json).get("data") or {}
    except ValueError:
        data = {}
    return {key: data.get(key) for key in keys}


def failing_pods(pods_json: str, stopped_too: bool = False) -> list[str]:
    """`pod: reason` for pods whose containers wait on an error (image pull, crash loop, config); with
    `stopped_too`, also those whose containers stopped on one (killed for memory, a failed exit) and
    those no node can take (unschedulable)."""
    bad = {"ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "CreateContainerConfigError"}
    stopped = {"OOMKilled", "Error", "ContainerCannotRun"} if stopped_too else set()
    try:
        items = json.loads(pods_json).get("items") or []
    except ValueError:
        return []
    found = []
    for pod in items:
        if stopped_too and any(
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
            for c in pod.get("status", {}).get("conditions") or []
        ):
            found.append(f"{pod['metadata']['name']}: Unschedulable")
        for status in pod.get("status", {}).get("containerStatuses") or []:
            state = status.get("state") or {}
            reason = (state.get("waiting") or {}).get("reason")
            ended = (state.get("terminated") or {}).get("reason")
            if reason in bad or ended in stopped:
                found.append(f"{pod['metadata']['name']}: {reason if reason in bad else ended}")
    return sorted(found)
