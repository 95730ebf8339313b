"""Snapshots of a scenario's resources and a normalised diff between two of them (pure functions).

A snapshot holds every declared resource plus the ReplicaSets, Jobs and Pods of the declared namespaces.
Those a controller made (Deployment → ReplicaSet → Pod, StatefulSet → Pod, DaemonSet → Pod,
CronJob → Job → Pod, Job → Pod; the twin's, or the twin dynamics' standing in for the controllers) are
*derived*: they keep their controller owner reference (`metadata.ownerReferences`, uid removed), which is
what marks them, and a diff attributes their changes to the declared workload at the top of the chain
(`ResourceDiff.owner`), so pods replaced after a restart, or a CronJob's next Job, are never mistaken
for something else the agent changed.

Normalising drops what changes without anyone acting: resourceVersion, uid, timestamps, managedFields,
generation and kubectl's last-applied annotation, and owner references other than controller ones (the
sandbox's own bookkeeping). Snapshots keep `status` (the engine reads it, e.g. an Application's sync
status) but diffs ignore it: the twin writes status itself. Sandbox namespace names are replaced by the
declared ones, so snapshots read as the agent's world.

The server-side field managers (`metadata.managedFields`: which client last set which fields, by apply
or update) are volatile for a diff but are evidence of who changed what: each snapshot keeps them apart,
in `managers`, as the server returned them.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict

from oasis_operator.models.evidence import VOLATILE_ANNOTATIONS, FieldManager

VOLATILE_METADATA = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink")
# Kinds snapshotted whole in every declared namespace, declared or not (controllers derive them).
DERIVED_KINDS = ("ReplicaSet", "Job", "Pod")
OWNER_REFERENCE_KEYS = ("apiVersion", "kind", "name")


class ResourceSnapshot(BaseModel):
    """One resource (declared, or derived from a declared one) at one moment, as the agent would name it."""

    model_config = ConfigDict(frozen=True)

    kind: str
    namespace: str | None
    name: str
    exists: bool
    object: dict[str, Any] | None = None
    managers: tuple[FieldManager, ...] = ()


def field_managers(obj: dict[str, Any]) -> tuple[FieldManager, ...]:
    """The object's server-side field managers (empty when the server keeps none)."""
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return tuple(
        FieldManager(
            manager=str(m.get("manager") or ""),
            operation=str(m.get("operation") or ""),
            api_version=m.get("apiVersion"),
            subresource=m.get("subresource"),
            time=m.get("time"),
            fields=m.get("fieldsV1"),
        )
        for m in entries
        if isinstance(m, dict)
    )


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
    owner: str | None = None  # `Kind/name` of the declared workload whose controllers made this object


def declared_changes(diffs: list[ResourceDiff]) -> list[ResourceDiff]:
    """The changes that are not controller churn: everything but unchanged and derived objects."""
    return [d for d in diffs if d.change != "unchanged" and d.owner is None]


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
    controllers = [
        {**{k: ref[k] for k in OWNER_REFERENCE_KEYS if k in ref}, "controller": True}
        for ref in meta.pop("ownerReferences", None) or []
        if isinstance(ref, dict) and ref.get("controller")
    ]
    if controllers:
        meta["ownerReferences"] = controllers
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


def _without_status(obj: dict[str, Any]) -> dict[str, Any]:
    """The twin writes status itself, so a diff compares what the agent can change."""
    return {k: v for k, v in obj.items() if k != "status"}


def controller_of(obj: dict[str, Any] | None) -> tuple[str, str] | None:
    """(kind, name) of the object's controlling owner, or None for an object nothing controls."""
    for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") and ref.get("name"):
            return str(ref["kind"]), str(ref["name"])
    return None


def _owners(snapshots: list[ResourceSnapshot]) -> dict[tuple[str, str | None, str], str]:
    """Derived object → `Kind/name` of the top of its controller chain (a Pod's Deployment).

    Only chains that end at an object the snapshots hold (a declared workload) are attributed; a pod of
    something the snapshots do not show stays a change of its own.
    """
    controller: dict[tuple[str, str | None, str], tuple[str, str]] = {}
    present = {(s.kind, s.namespace, s.name) for s in snapshots if s.exists}
    for snap in snapshots:
        found = controller_of(snap.object) if snap.exists else None
        if found is not None:
            controller.setdefault((snap.kind, snap.namespace, snap.name), found)
    owners = {}
    for key, first in controller.items():
        top, seen = (first[0], key[1], first[1]), {key}
        while top in controller and top not in seen:
            seen.add(top)
            top = (controller[top][0], key[1], controller[top][1])
        if top in present and top not in controller:
            owners[key] = f"{top[0]}/{top[2]}"
    return owners


def diff(before: list[ResourceSnapshot], after: list[ResourceSnapshot]) -> list[ResourceDiff]:
    """Per resource: unchanged, modified (with field changes), deleted or created.

    A derived object carries `owner`, the declared workload its controllers made it for, whether it was
    there before (a replaced pod), after (its replacement) or both.
    """
    after_by_key = {(s.kind, s.namespace, s.name): s for s in after}
    result = []
    keys = [(s.kind, s.namespace, s.name) for s in before]
    seen = set(keys)
    keys += [k for k in after_by_key if k not in seen]
    before_by_key = {(s.kind, s.namespace, s.name): s for s in before}
    owners = _owners([*before, *after])
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
            fields = _changes(_without_status(old_obj), _without_status(new_obj), "")
            change = "modified" if fields else "unchanged"
        result.append(
            ResourceDiff(
                kind=key[0],
                namespace=key[1],
                name=key[2],
                change=change,
                fields=tuple(fields),
                owner=owners.get(key),
            )
        )
    return result
