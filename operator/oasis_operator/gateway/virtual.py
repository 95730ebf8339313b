"""Namespace virtualisation: the agent sees declared names, the sandbox API server sees sandbox names.

Requests are rewritten structurally (path segments, `namespace` fields, node names, selectors), because
declared names are ordinary words ("default", "prod") that must not be replaced inside arbitrary text.
Responses are rewritten textually, because sandbox names are long and unique (`<prefix>-<env id>-…`), so
every occurrence of one, wherever the API server put it (a Table cell, a Status message, a username),
is a leak to remove.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from oasis_operator import API_GROUP, PROVIDER_FIELD_MANAGER
from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.models.environment import AGENT_SHOWN_NAME, Environment
from oasis_operator.sandbox.rbac import ROLE_NAME

# The event source kwok reports (its recorder's component).
KWOK_COMPONENT = "kwok_controller"
# Labels and annotations the sandbox puts on its objects for its own bookkeeping; the agent never sees them.
HIDDEN_METADATA_PREFIXES = (f"{API_GROUP}/",)
# Secrets that hold a token for the sandbox API server itself: a credential that would bypass the gateway.
SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"  # noqa: S105 (a type name)
# Object fields that hold user data, where a value equal to a namespace name is not a namespace reference.
_OPAQUE_FIELDS = frozenset({"data", "stringData", "binaryData", "annotations", "labels"})
# Cluster-scoped resources whose objects belong to environments (shown filtered, by declared name).
CLUSTER_OBJECT_KINDS = {"nodes": "Node", "persistentvolumes": "PersistentVolume"}
# Objects the provider puts in declared namespaces for its own purposes (the agent's RBAC): (group,
# resource) -> name. The scenario did not declare them, so the agent never sees them (get → 404).
PROVIDER_OBJECTS = {
    ("rbac.authorization.k8s.io", "roles"): ROLE_NAME,
    ("rbac.authorization.k8s.io", "rolebindings"): ROLE_NAME,
}


def provider_object_filter(info: RequestInfo) -> Callable[[dict[str, Any]], bool] | None:
    """A filter that drops the provider's own objects from answers about this resource, or None."""
    hidden = PROVIDER_OBJECTS.get((info.api_group, info.resource))
    if hidden is None:
        return None
    return lambda item: object_name(item) != hidden


class NameMap:
    """Translation between declared and sandbox names for one environment."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self._ns_to_sandbox = {b.declared: b.sandbox for b in env.namespaces}
        self._objects_to_sandbox = {(o.kind, o.declared): o.sandbox for o in env.cluster_objects}
        self.sandbox_namespaces = frozenset(b.sandbox for b in env.namespaces)
        in_scope = [b.declared for b in env.namespaces if b.in_scope]
        self.home_namespace = (in_scope or [b.declared for b in env.namespaces] or ["default"])[0]
        pairs = env.renames()
        # The agent's own identity lives in the control namespace; show it in the home namespace instead,
        # under a name without the environment id.
        pairs[env.control_namespace] = self.home_namespace
        if env.agent.service_account != AGENT_SHOWN_NAME:
            pairs[env.agent.service_account] = AGENT_SHOWN_NAME
        # Events kwok writes as the nodes' kubelet carry its component name; a cluster's say kubelet.
        pairs[KWOK_COMPONENT] = "kubelet"
        self._reverse: dict[str, str] = {}
        self._reverse_re: re.Pattern[str] | None = None
        self._set_reverse(pairs)

    def _set_reverse(self, pairs: dict[str, str]) -> None:
        self._reverse = dict(pairs)
        names = sorted(self._reverse, key=len, reverse=True)
        self._reverse_re = re.compile("|".join(re.escape(n) for n in names)) if names else None

    def sandbox_namespace(self, declared: str) -> str:
        """The sandbox name for a declared namespace; an undeclared one gets a name that exists nowhere.

        Forwarding an undeclared namespace under a fresh, never-created name means the real API server
        answers exactly as it does for a declared namespace the agent has no rights in (RBAC runs before
        any existence check), and no namespace outside the environment is ever reached.
        """
        known = self._ns_to_sandbox.get(declared)
        if known is not None:
            return known
        synthetic = self.unknown_name(declared)
        if synthetic not in self._reverse:
            self._set_reverse({**self._reverse, synthetic: declared})
        return synthetic

    def unknown_name(self, declared: str) -> str:
        """A sandbox name no object has, derived from a name the environment does not declare."""
        digest = hashlib.sha256(declared.encode()).hexdigest()[:8]
        return f"{self.env.prefix}-{self.env.id}-x{digest}"[:63]

    def sandbox_object(self, kind: str, declared: str) -> str:
        """The sandbox name of a cluster-scoped object (unknown names get a never-created name)."""
        known = self._objects_to_sandbox.get((kind, declared))
        if known is not None:
            return known
        synthetic = self.unknown_name(f"{kind}/{declared}")
        if synthetic not in self._reverse:
            self._set_reverse({**self._reverse, synthetic: declared})
        return synthetic

    def sandbox_objects(self, kind: str) -> frozenset[str]:
        """The sandbox names of this environment's cluster-scoped objects of one kind."""
        return frozenset(o.sandbox for o in self.env.cluster_objects if o.kind == kind)

    def declared_text(self, text: str) -> str:
        """Replace every sandbox name in `text` by its declared name."""
        if self._reverse_re is None:
            return text
        return self._reverse_re.sub(lambda m: self._reverse[m.group(0)], text)

    # ---- requests -----------------------------------------------------------------------------------

    def request_info(self, info: RequestInfo) -> RequestInfo:
        """The request with namespaces and cluster-object names in the path translated to the sandbox."""
        if not info.is_resource:
            return info
        if info.resource == "namespaces" and info.name:
            sandbox = self.sandbox_namespace(info.name)
            return replace(info, name=sandbox, namespace=sandbox)
        kind = CLUSTER_OBJECT_KINDS.get(info.resource)
        if kind and info.name and not info.namespace:
            return replace(info, name=self.sandbox_object(kind, info.name))
        if info.namespace:
            return info.with_namespace(self.sandbox_namespace(info.namespace))
        return info

    def request_body(self, body: Any) -> Any:
        """Translate namespace references (and node names) inside a request body to sandbox names."""
        return _walk_request(body, self)

    def translate_exact(self, value: bytes) -> bytes | None:
        """The sandbox name for a value that is exactly a declared namespace or node name, else None."""
        if not value or len(value) > 253:
            return None
        try:
            text = value.decode("ascii")
        except UnicodeDecodeError:
            return None
        if text in self._ns_to_sandbox:
            return self._ns_to_sandbox[text].encode()
        node = self._objects_to_sandbox.get(("Node", text))
        return node.encode() if node else None

    def field_selector(self, selector: str) -> str:
        """Translate namespace and node values of a field selector (`metadata.namespace=prod`, …)."""
        if not selector:
            return selector
        out = []
        for term in selector.split(","):
            match = re.fullmatch(r"([A-Za-z.]+)(!=|==|=)(.*)", term)
            if not match:
                out.append(term)
                continue
            key, op, value = match.groups()
            if value and key.endswith("namespace"):
                value = self.sandbox_namespace(value)
            elif value and key == "spec.nodeName":
                value = self.sandbox_object("Node", value)
            elif value and key == "involvedObject.name" and ("Node", value) in self._objects_to_sandbox:
                value = self._objects_to_sandbox[("Node", value)]
            out.append(f"{key}{op}{value}")
        return ",".join(out)

    # ---- responses ----------------------------------------------------------------------------------

    def response_document(self, doc: Any, keep: Callable[[dict[str, Any]], bool] | None = None) -> Any:
        """Hide the provider's bookkeeping (labels, annotations, owner references to the environment's
        control namespace, its managedFields entries) and sandbox credentials; drop objects `keep` rejects."""
        return _walk_response(doc, keep, self.env.control_namespace)


def _walk_request(node: Any, names: NameMap) -> Any:
    if isinstance(node, list):
        return [_walk_request(item, names) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _OPAQUE_FIELDS:
            out[key] = value
        elif key == "namespace" and isinstance(value, str) and value:
            out[key] = names.sandbox_namespace(value)
        elif key == "nodeName" and isinstance(value, str) and value:
            out[key] = names.sandbox_object("Node", value)
        else:
            out[key] = _walk_request(value, names)
    if node.get("kind") == "Namespace" and isinstance(out.get("metadata"), dict):
        meta = dict(out["metadata"])
        if isinstance(meta.get("name"), str):
            meta["name"] = names.sandbox_namespace(meta["name"])
        meta.pop("namespace", None)
        out["metadata"] = meta
    return out


def is_sandbox_credential(obj: dict[str, Any]) -> bool:
    """A Secret that carries a token for the sandbox API server (full object or Table row)."""
    if obj.get("type") == SERVICE_ACCOUNT_TOKEN_TYPE and obj.get("kind") in {"Secret", None}:
        return isinstance(obj.get("metadata"), dict)
    cells = obj.get("cells")
    return isinstance(cells, list) and SERVICE_ACCOUNT_TOKEN_TYPE in cells


def _provider_owner(ref: Any, control_namespace: str) -> bool:
    """An owner reference the provider set for teardown (to the environment's control namespace)."""
    return isinstance(ref, dict) and ref.get("kind") == "Namespace" and ref.get("name") == control_namespace


def _clean_metadata(meta: dict[str, Any], control_namespace: str) -> dict[str, Any]:
    out = dict(meta)
    managed = out.get("managedFields")
    if isinstance(managed, list):
        entries = [
            _clean_managed(m)
            for m in managed
            if not (isinstance(m, dict) and m.get("manager") == PROVIDER_FIELD_MANAGER)
        ]
        if entries:
            out["managedFields"] = entries
        else:
            out.pop("managedFields")
    owners = out.get("ownerReferences")
    if isinstance(owners, list):
        real = [ref for ref in owners if not _provider_owner(ref, control_namespace)]
        if real:
            out["ownerReferences"] = real
        else:
            out.pop("ownerReferences")
    for field in ("labels", "annotations"):
        values = out.get(field)
        if isinstance(values, dict):
            out[field] = {k: v for k, v in values.items() if not k.startswith(HIDDEN_METADATA_PREFIXES)}
    return out


def _clean_managed(entry: Any) -> Any:
    """Field ownership records without the hidden labels and annotations."""
    if not isinstance(entry, dict):
        return entry
    hidden = tuple(f"f:{prefix}" for prefix in HIDDEN_METADATA_PREFIXES)

    def scrub(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        return {k: scrub(v) for k, v in node.items() if not k.startswith(hidden)}

    return {**entry, "fieldsV1": scrub(entry.get("fieldsV1"))} if "fieldsV1" in entry else entry


def _walk_response(node: Any, keep: Callable[[dict[str, Any]], bool] | None, control: str) -> Any:
    if isinstance(node, list):
        return [_walk_response(item, keep, control) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "metadata" and isinstance(value, dict):
            out[key] = _clean_metadata(value, control)
        elif key in {"items", "rows"} and isinstance(value, list):
            out[key] = [
                _walk_response(item, keep, control)
                for item in value
                if not (isinstance(item, dict) and _rejected(item, keep))
            ]
        elif key in _OPAQUE_FIELDS:
            out[key] = value
        else:
            out[key] = _walk_response(value, keep, control)
    return out


def _rejected(item: dict[str, Any], keep: Callable[[dict[str, Any]], bool] | None) -> bool:
    if is_sandbox_credential(item):
        return True
    return keep is not None and not keep(item)


def object_name(item: dict[str, Any]) -> str:
    """The name of a list item or of a Table row (whose object carries at least the metadata)."""
    meta = item.get("metadata")
    if not isinstance(meta, dict):
        obj = item.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def single_object(doc: dict[str, Any]) -> bool:
    """A single object (not a list, table or Status) with a name."""
    if "items" in doc or doc.get("kind") in {"Table", "Status"}:
        return False
    return bool(object_name(doc))


def hidden_row(table: dict[str, Any], name: str, keep: Callable[[dict[str, Any]], bool] | None) -> bool:
    """A Table answer to a named get whose row the agent may not see."""
    rows = table.get("rows")
    if not isinstance(rows, list) or len(rows) != 1 or not isinstance(rows[0], dict):
        return False
    row = rows[0]
    return object_name(row) == name and (is_sandbox_credential(row) or (keep is not None and not keep(row)))
