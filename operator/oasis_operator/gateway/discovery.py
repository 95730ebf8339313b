"""Which resources of the sandbox API server are namespaced, from its discovery documents (cached).

The gateway fans an all-namespaces list or watch out to the environment's namespaces only for a
namespaced resource; it asks the API server's own discovery, as the gateway, once per group version.
"""

from __future__ import annotations

from oasis_operator.gateway.upstream import Upstream


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
