"""Discovery through the gateway: which sandbox resources are namespaced, and the groups it serves itself.

The gateway fans an all-namespaces list or watch out to the environment's namespaces only for a
namespaced resource; it asks the API server's own discovery, as the gateway, once per group version.

Agents get the API server's discovery filtered (`documents.clean_discovery`): the operator's group
hidden, the groups the gateway serves itself (`ServedGroups`, e.g. metrics.k8s.io) added. Both forms are
served: the legacy one (`/apis` lists groups, then one request per group version) and the aggregated one
(`as=APIGroupDiscoveryList`, every group's resources in the answer of `/api` and `/apis`), which kubectl
and client-go ask for first since 1.26; with it a cold kubectl discovers in 2 requests instead of ~26.
"""

from __future__ import annotations

from typing import Any

from oasis_operator.gateway.documents import aggregated_group, clean_discovery
from oasis_operator.gateway.upstream import Upstream


class ServedGroups:
    """The API groups the gateway answers itself, as discovery lists them in each of its two forms."""

    def __init__(self) -> None:
        self.legacy: list[dict[str, Any]] = []  # `APIGroupList` entries
        self.aggregated: list[dict[str, Any]] = []  # `APIGroupDiscovery` entries

    def add(self, group: dict[str, Any], resources: dict[str, Any] | None) -> None:
        """List `group` (an `APIGroupList` entry) with `resources` (its preferred version's
        `APIResourceList`, which the aggregated form lists); a group already listed is left as it is."""
        if resources is None:
            raise ValueError(f"api group {group.get('name')!r}: give its api_resources too")
        if any(g["name"] == group["name"] for g in self.legacy):
            return
        self.legacy.append(group)
        self.aggregated.append(aggregated_group(group, resources))

    def clean(self, doc: dict[str, Any]) -> dict[str, Any]:
        """`doc` as the agent may see it (`documents.clean_discovery`), these groups added."""
        return clean_discovery(doc, self.legacy, self.aggregated)


class Discovery:
    """Which resources are namespaced, from the sandbox API server's discovery documents (cached)."""

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream
        self._cache: dict[str, dict[str, bool]] = {}

    async def namespaced(self, prefix: str, resource: str) -> bool | None:
        if prefix not in self._cache or resource not in self._cache[prefix]:
            code, doc = await self._upstream.get_json(prefix)
            if code != 200 or not isinstance(doc, dict):
                return None
            self._cache[prefix] = {
                r["name"]: bool(r.get("namespaced")) for r in doc.get("resources", []) if "/" not in r["name"]
            }
        return self._cache[prefix].get(resource)
