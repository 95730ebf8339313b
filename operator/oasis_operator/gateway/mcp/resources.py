"""Which REST path a resource type name means, learned by discovery through the door, as kubectl does.

`deployment`, `deployments`, `deploy`, `Deployment`, `deployments.apps` and `deployments.v1.apps` all
name the same resource; the core group wins over others, then the server's own group order (so
`events` is core/v1 events, as in kubectl). Discovery documents are read once per MCP server (one
environment) and recorded by the gateway like kubectl's own discovery.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from oasis_operator.gateway.mcp.door import DoorClient, ToolCallError

_VERSION = re.compile(r"v\d+(?:(?:alpha|beta)\d+)?")


@dataclass(frozen=True)
class ApiResource:
    """One resource of the API: where it lives and what it is called."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        """The REST path of the collection, an object, or an object's subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if sub:
            base += f"/{sub}"
        return base


def _names(entry: dict[str, Any]) -> set[str]:
    names = {str(entry.get("name", "")).lower(), str(entry.get("singularName", "")).lower()}
    names.add(str(entry.get("kind", "")).lower())
    names.update(str(s).lower() for s in entry.get("shortNames") or [])
    return {n for n in names if n}


class Discovery:
    """Resource types of one environment's API, read lazily through its door."""

    def __init__(self, door: DoorClient) -> None:
        self._door = door
        self._resources: list[tuple[ApiResource, set[str]]] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> list[tuple[ApiResource, set[str]]]:
        async with self._lock:
            if self._resources is not None:
                return self._resources
            found: list[tuple[ApiResource, set[str]]] = []
            versions = [("", "v1")]
            groups = await self._door.request("GET", "/apis")
            groups.raise_for_status("discovery of API groups failed")
            for group in groups.json().get("groups") or []:
                preferred = (group.get("preferredVersion") or {}).get("version")
                if preferred:
                    versions.append((str(group["name"]), str(preferred)))
            for group_name, version in versions:
                path = f"/apis/{group_name}/{version}" if group_name else f"/api/{version}"
                listing = await self._door.request("GET", path)
                if not listing.ok:
                    continue  # a group the server cannot describe now; kubectl skips it the same way
                for entry in listing.json().get("resources") or []:
                    if "/" in str(entry.get("name", "")):
                        continue
                    resource = ApiResource(
                        group=group_name,
                        version=version,
                        plural=str(entry["name"]),
                        kind=str(entry.get("kind", "")),
                        namespaced=bool(entry.get("namespaced")),
                        verbs=tuple(str(v) for v in entry.get("verbs") or ()),
                    )
                    found.append((resource, _names(entry)))
            self._resources = found
            return found

    async def resolve(self, type_name: str) -> ApiResource:
        """The resource a type name means (`deploy`, `deployments.apps`, `Deployment`, ...)."""
        wanted = type_name.strip().lower()
        if not wanted:
            raise ToolCallError("the resource type is empty: name one, e.g. pods, deployments, configmaps")
        name, _, group = wanted.partition(".")
        version = ""
        head, _, rest = group.partition(".")
        if rest and _VERSION.fullmatch(head):
            version, group = head, rest
        for resource, names in await self._load():
            if name not in names or (group and resource.group != group):
                continue
            if version and resource.version != version:
                continue
            return resource
        raise ToolCallError(f'the server doesn\'t have a resource type "{type_name}"')

    async def by_kind(self, api_version: str, kind: str) -> ApiResource:
        """The resource of a manifest's `apiVersion` and `kind`."""
        group, _, version = api_version.rpartition("/")
        for resource, _names in await self._load():
            if resource.kind == kind and resource.group == group:
                # Another served version of the same group: the same plural at that version's path.
                return resource if resource.version == version else replace(resource, version=version)
        raise ToolCallError(f'no matches for kind "{kind}" in version "{api_version}"')
