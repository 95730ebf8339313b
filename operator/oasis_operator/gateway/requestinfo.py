"""Parse a Kubernetes API request path into what it asks for (the API server's own request-info rules)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import parse_qs

# Sub-paths of a namespace object that are subresources of it, not resources inside it.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_READ_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class RequestInfo:
    """What one request to the Kubernetes API is about; non-resource requests have `resource == ""`."""

    verb: str
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""
    is_resource: bool = False
    # Prefix up to and including the version ("/api/v1" or "/apis/apps/v1").
    prefix: str = ""

    @property
    def is_watch(self) -> bool:
        return self.verb == "watch"

    @property
    def is_read(self) -> bool:
        return self.verb in {"get", "list", "watch"}

    def with_namespace(self, namespace: str) -> RequestInfo:
        return replace(self, namespace=namespace)

    def path(self) -> str:
        """Rebuild the resource path from the parts (used after namespaces or names were rewritten)."""
        parts = [self.prefix]
        if self.resource == "namespaces":
            parts.append("namespaces")
            if self.name:
                parts.append(self.name)
        else:
            if self.namespace:
                parts += ["namespaces", self.namespace]
            parts.append(self.resource)
            if self.name:
                parts.append(self.name)
        if self.subresource:
            parts.append(self.subresource)
        return "/".join(parts)


def _truthy(values: list[str]) -> bool:
    return bool(values) and values[-1].lower() in {"1", "true"}


def parse_request(method: str, path: str, query: str = "") -> RequestInfo:
    """Classify a request like the API server does: verb, group, version, resource, name, namespace."""
    params = parse_qs(query, keep_blank_values=True)
    label_selector = (params.get("labelSelector") or [""])[-1]
    field_selector = (params.get("fieldSelector") or [""])[-1]
    parts = [p for p in path.split("/") if p]
    method_verb = method.lower()
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest, prefix = "", parts[1], parts[2:], f"/api/{parts[1]}"
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest, prefix = parts[1], parts[2], parts[3:], f"/apis/{parts[1]}/{parts[2]}"
    else:
        return RequestInfo(verb=method_verb, label_selector=label_selector, field_selector=field_selector)
    if not rest:
        return RequestInfo(verb=method_verb, api_group=group, api_version=version, prefix=prefix)
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
        if not rest:
            return RequestInfo(verb=method_verb, api_group=group, api_version=version, prefix=prefix)
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) >= 2:
        namespace = rest[1]
        if len(rest) == 2 or rest[2] in _NAMESPACE_SUBRESOURCES:
            resource, name, sub = "namespaces", rest[1], (rest[2] if len(rest) > 2 else "")
        else:
            resource = rest[2]
            name = rest[3] if len(rest) > 3 else ""
            sub = "/".join(rest[4:])
    else:
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else ""
        sub = "/".join(rest[2:])
    verb = _verb(method, bool(name), legacy_watch or _truthy(params.get("watch", [])))
    return RequestInfo(
        verb=verb,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=sub,
        name=name,
        namespace=namespace,
        label_selector=label_selector,
        field_selector=field_selector,
        is_resource=True,
        prefix=prefix,
    )


def _verb(method: str, has_name: bool, watch: bool) -> str:
    method = method.upper()
    if method in _READ_METHODS:
        if watch:
            return "watch"
        return "get" if has_name else "list"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
