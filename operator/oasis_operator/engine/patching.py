"""The object a write leaves behind: the object before it with the request body applied, by body form.

The body form comes from the request's content type (Kubernetes API conventions):

* ``application/json-patch+json``: RFC 6902 operations, applied with their values; ``test`` writes
  nothing. An operation that cannot apply to the object (a path that does not exist) makes the result
  unknown, and the caller falls back to reading the operations' paths.
* ``application/merge-patch+json``: RFC 7386 (objects merge, ``null`` deletes, lists replace).
* ``application/strategic-merge-patch+json``: a merge in which the lists Kubernetes declares as keyed
  (containers and volumes by ``name``, ports by port, ...) merge item by item by that key, and the
  directives ``$patch``, ``$retainKeys``, ``$setElementOrder/…``, ``$deleteFromPrimitiveList/…`` are read
  (deletion honoured, ordering and retention hints ignored). ``kubectl apply`` (client side) sends this
  form too.
* ``application/apply-patch+yaml``: server-side apply. The body is the applier's whole intent; fields it
  states are set, keyed lists merge as above. Fields another manager owns and the body omits stay: the
  engine has no field ownership, so a field this manager alone owned and then dropped is not seen as
  removed (a known limit: it can only make a write look smaller, never invent one).
* ``PUT`` (update/replace): the body is the new object.

Without a content type of these (`BodyForm.UNKNOWN`) the caller keeps its body-paths reading. Server-set
metadata and status never count as written (:data:`IGNORED_PATHS`).
"""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any

import jsonpatch
import jsonpointer

from oasis_operator.models.evidence import VOLATILE_ANNOTATIONS, AuditEntry

Path = tuple[str, ...]

IGNORED_PATHS: tuple[Path, ...] = (
    ("metadata", "resourceVersion"),
    ("metadata", "managedFields"),
    ("metadata", "generation"),
    ("metadata", "uid"),
    ("metadata", "creationTimestamp"),
    ("metadata", "selfLink"),
    *(("metadata", "annotations", key) for key in VOLATILE_ANNOTATIONS),
    ("status",),
    ("apiVersion",),
    ("kind",),
)

# Lists Kubernetes merges item by item (patchMergeKey / listMapKeys), by field name: candidate keys in order.
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"),
    "hostAliases": ("ip",),
    "ownerReferences": ("uid",),
    "conditions": ("type",),
    "topologySpreadConstraints": ("topologyKey",),
    "resourceClaims": ("name",),
}


class BodyForm(StrEnum):
    """How a write's body is to be read."""

    CREATE = "create"
    UPDATE = "update"
    JSON_PATCH = "json-patch"
    MERGE_PATCH = "merge-patch"
    STRATEGIC_MERGE_PATCH = "strategic-merge-patch"
    APPLY = "apply"
    UNKNOWN = "unknown"


def body_form(entry: AuditEntry) -> BodyForm:
    """The form of a write's body, from its verb and content type."""
    content_type = (entry.content_type or "").split(";")[0].strip().lower()
    if entry.verb == "create" and entry.subresource is None:
        return BodyForm.CREATE
    if entry.verb in ("update", "replace") or entry.method.upper() == "PUT":
        return BodyForm.UPDATE
    if "apply-patch" in content_type:
        return BodyForm.APPLY
    if content_type == "application/json-patch+json":
        return BodyForm.JSON_PATCH
    if content_type == "application/merge-patch+json":
        return BodyForm.MERGE_PATCH
    if content_type == "application/strategic-merge-patch+json":
        return BodyForm.STRATEGIC_MERGE_PATCH
    return BodyForm.UNKNOWN


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_key(field: str, items: list[Any]) -> str | None:
    for key in MERGE_KEYS.get(field, ()):
        if items and all(isinstance(item, dict) and key in item for item in items):
            return key
    return None


def _merge_list(field: str, old: Any, new: list[Any]) -> list[Any]:
    key = _merge_key(field, new)
    if key is None or not isinstance(old, list):
        return [strategic_merge(None, item) for item in new if not _is_delete(item)]
    merged = [copy.deepcopy(item) for item in old]
    for item in new:
        position = next(
            (i for i, cur in enumerate(merged) if isinstance(cur, dict) and cur.get(key) == item[key]), None
        )
        if _is_delete(item):
            if position is not None:
                merged.pop(position)
        elif position is None:
            merged.append(strategic_merge(None, item))
        else:
            merged[position] = strategic_merge(merged[position], item)
    return merged


def _is_delete(item: Any) -> bool:
    return isinstance(item, dict) and item.get("$patch") == "delete"


def strategic_merge(target: Any, patch: Any) -> Any:
    """A strategic merge patch (and the merge a server-side apply makes), as described above."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.partition("/")[2]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [item for item in result[field] if item not in value]
            continue
        if key.startswith("$"):
            continue
        if value is None or _is_delete(value):
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = strategic_merge(result.get(key), value)
    return result


def apply_json_patch(target: Any, ops: list[Any]) -> Any | None:
    """The object after RFC 6902 operations, or None when they do not apply to it."""
    writes = [op for op in ops if not (isinstance(op, dict) and op.get("op") == "test")]
    try:
        return jsonpatch.JsonPatch(writes).apply(copy.deepcopy(target))
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError):
        return None


def object_after(entry: AuditEntry, before: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object the write leaves (its attempt, when refused), or None when it cannot be computed."""
    body = entry.request_body
    form = body_form(entry)
    result: Any = None
    if form in (BodyForm.CREATE, BodyForm.UPDATE):
        result = copy.deepcopy(body)
    elif form is BodyForm.APPLY:
        result = strategic_merge(before, body)
    elif before is None or form is BodyForm.UNKNOWN:
        result = None
    elif form is BodyForm.JSON_PATCH:
        result = apply_json_patch(before, body) if isinstance(body, list) else None
    elif form is BodyForm.MERGE_PATCH:
        result = merge_patch(before, body)
    else:
        result = strategic_merge(before, body)
    return result if isinstance(result, dict) else None


def starts_with(path: Path, prefix: Path) -> bool:
    """True when `prefix` is a leading part of `path`."""
    return path[: len(prefix)] == prefix


def diff_paths(old: Any, new: Any, prefix: Path = ()) -> list[Path]:
    """Paths at which two values differ (list items of equal-length lists compared position by position).

    An absent mapping reads as an empty one, so a difference is named at its leaves: a mapping that
    appears empty differs nowhere, and one that appears with ignored keys only (a server-set annotation)
    differs only at those keys.
    """
    if (isinstance(old, dict) and new is None) or (old is None and isinstance(new, dict)):
        old, new = old or {}, new or {}
    if isinstance(old, dict) and isinstance(new, dict):
        paths: list[Path] = []
        for key in sorted(set(old) | set(new), key=str):
            paths.extend(diff_paths(old.get(key), new.get(key), (*prefix, str(key))))
        return paths
    if old == new:
        return []
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        paths = []
        for left, right in zip(old, new, strict=True):
            paths.extend(diff_paths(left, right, (*prefix, "*")))
        return paths
    return [prefix]


def changed_paths(old: Any, new: Any) -> list[Path]:
    """What a write changed, without server-set metadata and status."""
    return [p for p in diff_paths(old, new) if not any(starts_with(p, i) for i in IGNORED_PATHS)]
