"""Whole-document rewrites of Kubernetes API bodies: request bodies, discovery, merged lists."""

from __future__ import annotations

import json
from typing import Any

import yaml

from oasis_operator import API_GROUP
from oasis_operator.gateway.virtual import NameMap
from oasis_operator.localcluster.kwok import STAGE_GROUP

# API groups of the operator itself, present when sandboxes share the operator's local control plane, and
# of kwok, whose Stages play the sandbox's kubelets: neither is the agent's world.
HIDDEN_API_GROUPS = frozenset({API_GROUP, STAGE_GROUP})


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


def clean_discovery(
    doc: dict[str, Any],
    extra_groups: list[dict[str, Any]] | None = None,
    extra_aggregated: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Discovery without the sandbox server's own address or the operator's API group, plus the groups
    the gateway serves itself: `extra_groups` (`APIGroupList` entries) in the legacy form of `/apis`,
    `extra_aggregated` (`APIGroupDiscovery` entries) in its aggregated form."""
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
    if doc.get("kind") == "APIGroupDiscoveryList" and isinstance(doc.get("items"), list):
        items = [i for i in doc["items"] if isinstance(i, dict) and _group_name(i) not in HIDDEN_API_GROUPS]
        # `/api` answers the core group alone (no name); the groups the gateway adds belong in `/apis`.
        if any(_group_name(i) for i in items):
            known = {_group_name(i) for i in items}
            items += [g for g in extra_aggregated or [] if _group_name(g) not in known]
        doc = {**doc, "items": items}
    return doc


def _group_name(item: dict[str, Any]) -> str:
    metadata = item.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


def aggregated_group(group: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
    """The `APIGroupDiscovery` entry of a group the gateway serves itself, from its `APIGroupList` entry
    and the `APIResourceList` of its preferred version, in the shape the API server gives its own."""
    version = group["preferredVersion"]["version"]
    listed = [
        {
            "resource": r["name"],
            "responseKind": {"group": "", "version": "", "kind": r["kind"]},
            "scope": "Namespaced" if r.get("namespaced") else "Cluster",
            "singularResource": r.get("singularName", ""),
            "verbs": list(r.get("verbs", [])),
        }
        for r in resources.get("resources", [])
        if "/" not in r["name"]
    ]
    return {
        "metadata": {"name": group["name"]},
        "versions": [{"version": version, "resources": listed, "freshness": "Current"}],
    }


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
