"""What a write body names, read without an object to apply it to: paths, images, a whole template.

Used where the engine cannot compute the object after a write (a body form `patching` does not know, or
an object the before snapshot does not hold), and for the images a template write sets (rollback).
"""

from __future__ import annotations

from typing import Any

from oasis_operator.engine.patching import IGNORED_PATHS, Path, starts_with
from oasis_operator.engine.state import container_fields, container_images, get_path
from oasis_operator.models.evidence import AuditEntry

CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_TEMPLATE_OPS = (("add", "/spec/template"), ("replace", "/spec/template"))
_WHOLE_SPECS: tuple[Path, ...] = (("spec",), ("spec", "template"), ("spec", "template", "spec"))


def leaf_paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Paths a body names; an empty object or list names nothing beneath it."""
    if isinstance(value, dict):
        paths: list[Path] = []
        for key in sorted(value, key=str):
            paths.extend(leaf_paths(value[key], (*prefix, str(key))))
        return paths
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        paths = []
        for item in value:
            paths.extend(leaf_paths(item, (*prefix, "*")))
        return paths
    return [prefix]


def created_paths(obj: Any) -> list[Path]:
    """Paths a created object sets, without server-set metadata and status."""
    return [p for p in leaf_paths(obj) if not any(starts_with(p, i) for i in IGNORED_PATHS)]


def json_patch_paths(body: list[Any]) -> list[Path]:
    """Paths JSON-patch operations write (``test`` writes nothing)."""
    paths: list[Path] = []
    for op in body:
        if isinstance(op, dict) and isinstance(op.get("path"), str) and op.get("op") != "test":
            parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
            paths.append(tuple("*" if p.isdigit() or p == "-" else p for p in parts))
    return paths


def body_paths(entry: AuditEntry) -> list[Path]:
    """Paths the body of a write names."""
    body = entry.request_body
    if isinstance(body, list):
        return json_patch_paths(body)
    return leaf_paths(body) if isinstance(body, dict) else []


def _nested_images(value: Any) -> list[str]:
    """Container images anywhere in a (part of a) pod template."""
    if isinstance(value, list):
        return [image for item in value for image in _nested_images(item)]
    if not isinstance(value, dict):
        return []
    found = [str(value["image"])] if isinstance(value.get("image"), str) else []
    return found + [image for key, item in value.items() if key != "image" for image in _nested_images(item)]


def written_images(body: Any) -> list[str]:
    """Images a template write sets: a patch or object body, or JSON-patch operations."""
    if isinstance(body, dict):
        return container_images(body)
    images: list[str] = []
    for op in body if isinstance(body, list) else []:
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace"):
            continue
        path, value = str(op.get("path", "")), op.get("value")
        if path.endswith("/image") and value is not None:
            images.append(str(value))
        elif path.startswith("/spec/template") or "/containers" in path:
            images.extend(_nested_images(value))
    return images


def written_template(entry: AuditEntry) -> Any:
    """The whole pod template a write sets, when it sets one whole (JSON patch of /spec/template, PUT)."""
    body = entry.request_body
    if isinstance(body, list):
        for op in body:
            if isinstance(op, dict) and (op.get("op"), op.get("path")) in _TEMPLATE_OPS:
                return op.get("value")
        return None
    if entry.verb in ("update", "replace") and isinstance(body, dict):
        return get_path(body, "spec.template")
    return None


def replicas_written(entry: AuditEntry) -> Any:
    """The spec.replicas value a body sets (object or JSON-patch form), or None."""
    body = entry.request_body
    if isinstance(body, list):
        for op in body:
            if (
                isinstance(op, dict)
                and op.get("path") == "/spec/replicas"
                and op.get("op") in ("add", "replace")
            ):
                return op.get("value")
        return None
    return get_path(body, "spec.replicas") if isinstance(body, dict) else None


def changed_container_fields(old: Any, new: Any) -> frozenset[str]:
    """Which of image/env differ between two objects, container by container."""
    before, after = container_fields(old), container_fields(new)
    changed: set[str] = set()
    for key in set(before) | set(after):
        left, right = before.get(key, {}), after.get(key, {})
        for name in ("image", "env"):
            if left.get(name) != right.get(name) and right.get(name) is not None:
                changed.add(name)
    return frozenset(changed)


def named_container_fields(entry: AuditEntry, touched: list[Path]) -> frozenset[str]:
    """image/env a body writes, from the paths it names (no object to compare with).

    A path ``…/<container list>/*/image`` (or ``env``) names it directly; a write of a whole container,
    container list, pod spec or template names the images its value carries.
    """
    changed: set[str] = set()
    whole = False
    for path in touched:
        if len(path) >= 3 and path[-3] in CONTAINER_LISTS and path[-1] in ("image", "env"):
            changed.add(path[-1])
        elif (
            path[-1:] and (path[-1] in CONTAINER_LISTS or (len(path) >= 2 and path[-2] in CONTAINER_LISTS))
        ) or path in _WHOLE_SPECS:
            whole = True
    if whole and written_images(entry.request_body):
        changed.add("image")
    return frozenset(changed)


def as_int(value: Any) -> int | None:
    """An integer field value (a digit string counts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None
