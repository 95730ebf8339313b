"""The Kubernetes tools of an environment's MCP server: kubectl's verbs as the requests kubectl makes.

Each tool turns its arguments into the HTTP request(s) kubectl would send for the same command (a
server-side apply, a merge patch of the scale subresource, a strategic patch of the pod template's
`restartedAt` annotation, a JSON patch of the template from an older ReplicaSet, ...) and sends them
through the environment's door. Whatever the gateway and the sandbox's RBAC answer is the tool's
answer; a refusal is a tool error worded as kubectl words it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

import yaml

from oasis_operator.gateway.mcp.door import FIELD_MANAGER, DoorClient, ToolCallError
from oasis_operator.gateway.mcp.resources import ApiResource, Discovery
from oasis_operator.gateway.mcp.rollout import RolloutTools

PATCH_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}
APPLY_TYPE = "application/apply-patch+yaml"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def kind_name(resource: ApiResource, name: str) -> str:
    """`deployment.apps/web`, as kubectl names an object in its messages."""
    kind = resource.kind.lower() + (f".{resource.group}" if resource.group else "")
    return f"{kind}/{name}"


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=False)


def _typed(items: list[dict[str, Any]], resource: ApiResource) -> list[dict[str, Any]]:
    """List items with their `apiVersion` and `kind` set, as `kubectl get -o json` shows them."""
    return [{"apiVersion": resource.api_version, "kind": resource.kind, **item} for item in items]


def split_target(resource: str, name: str) -> tuple[str, str]:
    """`deployment/web` or (`deployment`, `web`) → (`deployment`, `web`)."""
    kind, slash, rest = resource.partition("/")
    if slash:
        if name and name != rest:
            raise ToolCallError(f"resource {resource!r} already names an object; leave name empty")
        return kind, rest
    return resource, name


class KubeTools:
    """The Kubernetes tools of one environment; `home` is the namespace used when none is given."""

    def __init__(self, door: DoorClient, home: str) -> None:
        self.door = door
        self.home = home
        self.discovery = Discovery(door)
        self.rollouts = RolloutTools(self)

    async def target(
        self, resource: str, name: str = "", *, need_name: bool = True
    ) -> tuple[ApiResource, str]:
        kind, obj = split_target(resource, name)
        if need_name and not obj:
            raise ToolCallError(f"name the {kind} (argument `name`, or resource as `{kind}/<name>`)")
        return await self.discovery.resolve(kind), obj

    def namespace(self, resource: ApiResource, namespace: str | None) -> str | None:
        return (namespace or self.home) if resource.namespaced else None

    async def read(self, resource: ApiResource, name: str, namespace: str | None) -> dict[str, Any]:
        answer = await self.door.request("GET", resource.path(self.namespace(resource, namespace), name))
        answer.raise_for_status(f"get {kind_name(resource, name)} failed")
        doc: dict[str, Any] = answer.json()
        return doc

    async def items(
        self, resource: ApiResource, namespace: str | None, query: dict[str, str]
    ) -> list[dict[str, Any]]:
        answer = await self.door.request(
            "GET", resource.path(namespace), {k: v for k, v in query.items() if v}
        )
        answer.raise_for_status(f"list {resource.plural} failed")
        return _typed(list(answer.json().get("items") or []), resource)

    # ---- reads ------------------------------------------------------------------------------------

    async def get(self, resource: str, name: str = "", namespace: str | None = None) -> str:
        """One object as JSON (`kubectl get <type> <name> -o json`)."""
        api, obj = await self.target(resource, name)
        doc = await self.read(api, obj, namespace)
        return _dump({"apiVersion": api.api_version, "kind": api.kind, **doc})

    async def list(
        self,
        resource: str,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str = "",
        field_selector: str = "",
    ) -> str:
        """Objects of one or more types (comma-separated) as a JSON List (`kubectl get -o json`)."""
        items: list[dict[str, Any]] = []
        for kind in [k.strip() for k in resource.split(",") if k.strip()] or [resource]:
            api = await self.discovery.resolve(kind)
            scope = None if all_namespaces else self.namespace(api, namespace)
            query = {"labelSelector": label_selector, "fieldSelector": field_selector}
            items += await self.items(api, scope, query)
        return _dump({"apiVersion": "v1", "kind": "List", "items": items})

    async def events(
        self, namespace: str | None = None, all_namespaces: bool = False, for_object: str = ""
    ) -> str:
        """Events, oldest first (`kubectl events [--for kind/name]`)."""
        api = await self.discovery.resolve("events")
        selector = ""
        if for_object:
            _, name = split_target(for_object, "")
            selector = f"involvedObject.name={name or for_object}"
        scope = None if all_namespaces else namespace or self.home
        found = await self.items(api, scope, {"fieldSelector": selector})
        found.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        return _event_table(found) if found else "No events found."

    async def describe(self, resource: str, name: str = "", namespace: str | None = None) -> str:
        """An object and the events about it, as a person reads `kubectl describe`."""
        api, obj = await self.target(resource, name)
        doc = await self.read(api, obj, namespace)
        meta = doc.get("metadata") or {}
        meta.pop("managedFields", None)
        text = f"Name: {meta.get('name', obj)}\n"
        if api.namespaced:
            text += f"Namespace: {meta.get('namespace', '')}\n"
        text += f"Kind: {api.kind}\nAPI Version: {api.api_version}\n"
        text += yaml.safe_dump(doc, sort_keys=False)
        if api.kind != "Event":
            events = await self.discovery.resolve("events")
            selector = f"involvedObject.name={obj}"
            scope = self.namespace(api, namespace) or ""
            if scope:
                selector += f",involvedObject.namespace={scope}"
            found = await self.items(events, scope or None, {"fieldSelector": selector})
            text += "Events:\n" + (_event_table(found) if found else "  <none>") + "\n"
        return text

    async def logs(
        self,
        name: str,
        namespace: str | None = None,
        container: str = "",
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> str:
        """A pod's log, or one pod's of a workload given as `deployment/<name>` (`kubectl logs`)."""
        pods = await self.discovery.resolve("pods")
        ns = namespace or self.home
        kind, obj = split_target(name, "")
        pod = obj if kind.lower() in {"pod", "pods", "po"} else ""
        if not obj:
            pod = kind
        elif not pod:
            pod = await self._pod_of(kind, obj, ns)
        query = {"container": container, "previous": "true" if previous else "", "timestamps": ""}
        if timestamps:
            query["timestamps"] = "true"
        if tail_lines is not None:
            query["tailLines"] = str(tail_lines)
        if since_seconds is not None:
            query["sinceSeconds"] = str(since_seconds)
        answer = await self.door.request(
            "GET", pods.path(ns, pod, "log"), {k: v for k, v in query.items() if v}
        )
        answer.raise_for_status(f"logs of pod/{pod} failed")
        return answer.text

    async def _pod_of(self, kind: str, name: str, namespace: str) -> str:
        """The pod kubectl would read a workload's logs from: a ready one first, then the newest."""
        api = await self.discovery.resolve(kind)
        workload = await self.read(api, name, namespace)
        labels = ((workload.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if not labels:
            raise ToolCallError(f"{kind_name(api, name)} has no label selector to find its pods by")
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        found = await self.items(await self.discovery.resolve("pods"), namespace, {"labelSelector": selector})
        if not found:
            raise ToolCallError(f"no pods found for {kind_name(api, name)} (selector {selector})")

        def rank(pod: dict[str, Any]) -> tuple[bool, str]:
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (pod.get("status") or {}).get("conditions") or []
            )
            return (not ready, str(pod["metadata"].get("creationTimestamp", "")))

        found.sort(key=rank)
        return str(found[0]["metadata"]["name"])

    # ---- writes -----------------------------------------------------------------------------------

    async def apply(self, manifest: str, namespace: str | None = None) -> str:
        """Server-side apply of every object in a YAML or JSON manifest (`kubectl apply --server-side`)."""
        try:
            docs = [d for d in yaml.safe_load_all(manifest) if d]
        except yaml.YAMLError as exc:
            raise ToolCallError(f"the manifest is not valid YAML or JSON: {exc}") from exc
        done = []
        for doc in docs:
            if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
                raise ToolCallError("every object in the manifest needs apiVersion, kind and metadata.name")
            api = await self.discovery.by_kind(str(doc["apiVersion"]), str(doc["kind"]))
            meta = doc.setdefault("metadata", {})
            name = str(meta.get("name") or "")
            if not name:
                raise ToolCallError(f"a {doc['kind']} in the manifest has no metadata.name")
            ns = self.namespace(api, namespace or meta.get("namespace"))
            if ns:
                meta["namespace"] = ns
            answer = await self.door.request(
                "PATCH",
                api.path(ns, name),
                {"fieldManager": FIELD_MANAGER, "force": "true"},
                doc,
                APPLY_TYPE,
            )
            answer.raise_for_status(f"apply of {kind_name(api, name)} failed")
            done.append(
                f"{kind_name(api, name)} {'created' if answer.status == 201 else 'serverside-applied'}"
            )
        return "\n".join(done) or "the manifest holds no objects"

    async def patch(
        self,
        resource: str,
        patch: str,
        name: str = "",
        namespace: str | None = None,
        patch_type: Literal["strategic", "merge", "json"] = "strategic",
    ) -> str:
        """Patch an object (`kubectl patch --type strategic|merge|json -p PATCH`)."""
        api, obj = await self.target(resource, name)
        try:
            body = yaml.safe_load(patch)
        except yaml.YAMLError as exc:
            raise ToolCallError(f"the patch is not valid JSON or YAML: {exc}") from exc
        if patch_type not in PATCH_TYPES:
            raise ToolCallError(f"patch_type must be one of {', '.join(PATCH_TYPES)}, not {patch_type!r}")
        answer = await self.door.request(
            "PATCH", api.path(self.namespace(api, namespace), obj), None, body, PATCH_TYPES[patch_type]
        )
        answer.raise_for_status(f"patch of {kind_name(api, obj)} failed")
        return f"{kind_name(api, obj)} patched"

    async def delete(
        self,
        resource: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        all: bool = False,  # kubectl's own flag name
    ) -> str:
        """Delete one object, or every object matching a selector or `all` (`kubectl delete`)."""
        api, obj = await self.target(resource, name, need_name=False)
        ns = self.namespace(api, namespace)
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if obj:
            answer = await self.door.request("DELETE", api.path(ns, obj), None, options)
            answer.raise_for_status(f"delete of {kind_name(api, obj)} failed")
            return f'{kind_name(api, obj).split("/")[0]} "{obj}" deleted'
        if not (label_selector or all):
            raise ToolCallError("name an object, or pass label_selector or all=true to delete many")
        query = {"labelSelector": label_selector} if label_selector else {}
        answer = await self.door.request("DELETE", api.path(ns), query, options)
        answer.raise_for_status(f"delete of {api.plural} failed")
        gone = len(answer.json().get("items") or [])
        return f"{gone} {api.plural} deleted"

    async def scale(self, resource: str, replicas: int, name: str = "", namespace: str | None = None) -> str:
        """Set the replicas through the scale subresource (`kubectl scale --replicas=N`)."""
        if replicas < 0:
            raise ToolCallError(f"replicas must be 0 or more, not {replicas}")
        api, obj = await self.target(resource, name)
        path = api.path(self.namespace(api, namespace), obj, "scale")
        answer = await self.door.request(
            "PATCH", path, None, {"spec": {"replicas": replicas}}, PATCH_TYPES["merge"]
        )
        answer.raise_for_status(f"scale of {kind_name(api, obj)} failed")
        return f"{kind_name(api, obj)} scaled"

    async def rollout_restart(self, resource: str, name: str = "", namespace: str | None = None) -> str:
        """Restart a workload's pods by stamping its pod template (`kubectl rollout restart`)."""
        api, obj = await self.target(resource, name)
        if api.kind not in {"Deployment", "StatefulSet", "DaemonSet"}:
            raise ToolCallError(f"{kind_name(api, obj)}: restarting is not supported for a {api.kind}")
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
        answer = await self.door.request(
            "PATCH", api.path(self.namespace(api, namespace), obj), None, body, PATCH_TYPES["strategic"]
        )
        answer.raise_for_status(f"restart of {kind_name(api, obj)} failed")
        return f"{kind_name(api, obj)} restarted"


def _event_table(events: list[dict[str, Any]]) -> str:
    rows = ["  Type     Reason    Object    Count    Message"]
    for ev in events:
        involved = ev.get("involvedObject") or {}
        rows.append(
            f"  {ev.get('type', '')}  {ev.get('reason', '')}  "
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}  "
            f"{ev.get('count', 1)}  {ev.get('message', '')}"
        )
    return "\n".join(rows)
