"""Whole-document rewrites of Kubernetes API bodies: request bodies, discovery, merged lists."""

from __future__ import annotations

import json
from typing import Any

import yaml

from oasis_operator import API_GROUP
from oasis_operator.gateway.virtual import NameMap

# API groups of the operator itself, present when sandboxes share the operator's local control plane.
HIDDEN_API_GROUPS = frozenset({API_GROUP})


def rewrite_body(body: bytes, content_type: str, names: NameMap) -> bytes:
    """The request body with namespace references translated; JSON out (JSON is also valid YAML)."""
    try:
        doc = json.loads(body)
    except ValueError:
        if "yaml" not in content_type:
            return body  # the API server answers a malformed body itself
        try:
            doc = yaml.safe_load(body)
        except yaml.YAMLError:
            return body
    return json.dumps(names.request_body(doc)).encode()


def clean_discovery(doc: dict[str, Any], extra_groups: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Discovery without the sandbox server's own address or the operator's API group, plus the groups
    the gateway serves itself (`extra_groups`)."""
    if "serverAddressByClientCIDRs" in doc:
        doc = {k: v for k, v in doc.items() if k != "serverAddressByClientCIDRs"}
    if doc.get("kind") == "APIGroupList" and isinstance(doc.get("groups"), list):
        groups = [
            {k: v for k, v in g.items() if k != "serverAddressByClientCIDRs"}
            for g in doc["groups"]
            if isinstance(g, dict) and g.get("name") not in HIDDEN_API_GROUPS
        ]
        known = {g.get("name") for g in groups}
        groups += [g for g in extra_groups or [] if g["name"] not in known]
        doc = {**doc, "groups": groups}
    return doc


def merge_lists(merged: dict[str, Any] | None, doc: dict[str, Any]) -> dict[str, Any]:
    """Concatenate two lists (or two Tables) from different namespaces."""
    version = str(doc.get("metadata", {}).get("resourceVersion", ""))
    if merged is None:
        merged = dict(doc)
        merged["metadata"] = {**doc.get("metadata", {}), "resourceVersion": version}
        merged["metadata"].pop("continue", None)
        return merged
    # Resource versions are one cluster-wide counter: the newest list is a valid point to watch from.
    current = str(merged["metadata"].get("resourceVersion", ""))
    if version.isdigit() and (not current.isdigit() or int(version) > int(current)):
        merged["metadata"]["resourceVersion"] = version
    for key in ("items", "rows"):
        if key in doc:
            merged[key] = [*(merged.get(key) or []), *(doc.get(key) or [])]
    return merged
