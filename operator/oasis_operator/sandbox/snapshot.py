"""Snapshots of the declared resources and a normalised diff between two of them (pure functions).

Normalising drops what changes without anyone acting: resourceVersion, uid, timestamps, managedFields,
generation, kubectl's last-applied annotation, and `status` (the twin itself writes status). Sandbox
namespace names are replaced by the declared ones, so snapshots read as the agent's world.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict

VOLATILE_METADATA = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink")
VOLATILE_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
)
# Kinds whose state the scenarios declare and the verification blocks inspect.
SNAPSHOT_KINDS = frozenset(
    {
        "Namespace",
        "Deployment",
        "Pod",
        "ConfigMap",
        "Secret",
        "Service",
        "Ingress",
        "NetworkPolicy",
        "HorizontalPodAutoscaler",
        "PersistentVolumeClaim",
        "Node",
        "Application",
        "ResourceQuota",
        "PodDisruptionBudget",
        "ServiceAccount",
        "Role",
        "RoleBinding",
    }
)


class ResourceSnapshot(BaseModel):
    """One declared resource at one moment, as the agent would name it."""

    model_config = ConfigDict(frozen=True)

    kind: str
    namespace: str | None
    name: str
    exists: bool
    object: dict[str, Any] | None = None


class FieldChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    before: Any = None
    after: Any = None


class ResourceDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    namespace: str | None
    name: str
    change: str  # unchanged | modified | deleted | created
    fields: tuple[FieldChange, ...] = ()


def normalise(obj: dict[str, Any], renames: dict[str, str], keep_status: bool = False) -> dict[str, Any]:
    """A copy of `obj` without volatile fields, with sandbox names replaced by declared ones."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata", {})
    for key in VOLATILE_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    for key in VOLATILE_ANNOTATIONS:
        annotations.pop(key, None)
    if not annotations:
        meta.pop("annotations", None)
    meta.pop("ownerReferences", None)
    if not keep_status:
        out.pop("status", None)
    renamed: dict[str, Any] = _rename(out, renames)
    return renamed


def _rename(value: Any, renames: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _rename(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, renames) for v in value]
    if isinstance(value, str) and value in renames:
        return renames[value]
    return value


def _changes(before: Any, after: Any, path: str) -> list[FieldChange]:
    if isinstance(before, dict) and isinstance(after, dict):
        changes = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            changes += _changes(before.get(key), after.get(key), sub)
        return changes
    if before != after:
        return [FieldChange(path=path, before=before, after=after)]
    return []


def diff(before: list[ResourceSnapshot], after: list[ResourceSnapshot]) -> list[ResourceDiff]:
    """Per resource: unchanged, modified (with field changes), deleted or created."""
    after_by_key = {(s.kind, s.namespace, s.name): s for s in after}
    result = []
    keys = [(s.kind, s.namespace, s.name) for s in before]
    keys += [k for k in after_by_key if k not in set(keys)]
    before_by_key = {(s.kind, s.namespace, s.name): s for s in before}
    for key in keys:
        old, new = before_by_key.get(key), after_by_key.get(key)
        fields: list[FieldChange] = []
        old_obj = old.object if old and old.exists else None
        new_obj = new.object if new and new.exists else None
        if old_obj is None and new_obj is None:
            change = "unchanged"
        elif old_obj is None:
            change = "created"
        elif new_obj is None:
            change = "deleted"
        else:
            fields = _changes(old_obj, new_obj, "")
            change = "modified" if fields else "unchanged"
        result.append(
            ResourceDiff(kind=key[0], namespace=key[1], name=key[2], change=change, fields=tuple(fields))
        )
    return result
