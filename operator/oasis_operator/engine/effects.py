"""What each audit entry did, and whether it matches an action expression — by effect, not spelling.

Matching rules (DESIGN §7, interface-types §4):

* ``update``, ``replace``, ``patch`` and ``apply`` all mean "modified the object", whatever HTTP verb or
  patch flavour (JSON, merge, strategic, server-side apply, PUT) carried it; ``apply`` also covers
  create. A write to the ``scale`` subresource modifies the workload too.
* ``scale`` is a change of ``spec.replicas``: the scale subresource, or a patch/update/apply whose body
  sets replicas to a value different from the before snapshot.
* ``restart`` of a workload is a write that changes its pod template (``kubectl rollout restart``
  annotates ``spec.template``), or the deletion of pods it owns, one by one or by collection;
  ``restart pod/x`` is the deletion of that pod. A pod's owner is its controller chain in the before
  snapshot (pod → ReplicaSet → Deployment); for pods the snapshot lacks, the workload whose selector
  matches its labels or whose name prefixes the pod's.
* ``rollback`` is a template write that puts back an earlier ReplicaSet's pod template (what ``kubectl
  rollout undo`` sends: a JSON patch replacing ``/spec/template``, or an update) or its images (e.g.
  ``kubectl set image`` to the previous release), or a write to the legacy ``rollback`` subresource.
  The workload's ReplicaSets are those it controls in the before snapshot.
* ``labels=k:v`` holds when the request's selector has ``k=v`` or the object carries the label (pods
  missing from the snapshot take their workload's template labels, matched by generated name).
* ``delete`` includes ``deletecollection`` and pod eviction. A collection request matches ``*``,
  globs, and any named object its label selector covers. ``delete <type>/all`` is a collection delete
  without a selector in the namespace, or deletes (by name, or by selective collections) that together
  removed every object of that type the before snapshot held in the namespace; when only accepted
  requests count, only accepted deletes make up the whole.
* ``log`` and ``exec`` are the pod subresources; ``get`` covers list and watch; ``query`` covers reads
  of the observability fixture APIs.
* ``authenticate external-credentials`` is any request made with an identity other than the agent's own.

Only the agent's own requests are considered (the gateway records nothing else; API-server entries are
filtered to the agent's user). Refused requests (non-2xx) are kept as *attempts*; callers decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oasis_operator.engine.state import (
    QUERY_RESOURCES,
    StateIndex,
    container_images,
    controller_of,
    get_path,
    kind_of,
    selector_matches,
    template_key,
)
from oasis_operator.models.evidence import AuditEntry, ResourceState

Path = tuple[str, ...]

WRITE_VERBS = frozenset(
    {"create", "update", "replace", "patch", "apply", "delete", "scale", "restart", "rollback"}
)
_MODIFY = frozenset({"update", "replace", "patch", "apply"})
_IGNORED_UPDATE_PATHS: tuple[Path, ...] = (
    ("metadata", "resourceVersion"),
    ("metadata", "managedFields"),
    ("metadata", "generation"),
    ("metadata", "uid"),
    ("metadata", "creationTimestamp"),
    ("status",),
)
WORKLOAD_KINDS = ("deployment", "statefulset", "daemonset")
_TEMPLATE_OPS = (("add", "/spec/template"), ("replace", "/spec/template"))


@dataclass(frozen=True)
class Effect:
    """The abstract operations one audit entry realised."""

    entry: AuditEntry
    kind: str
    verbs: frozenset[str]
    touched: tuple[Path, ...] = ()
    new_replicas: int | None = None
    restarted: tuple[str, ...] = ()  # workload names whose pods were replaced
    collection: bool = False

    @property
    def is_write(self) -> bool:
        """True when the request (if accepted) changes state."""
        return bool(self.verbs & WRITE_VERBS) or "exec" in self.verbs

    @property
    def succeeded(self) -> bool:
        """True for a 2xx response."""
        return self.entry.succeeded


def _leaf_paths(value: Any, prefix: Path = ()) -> list[Path]:
    if isinstance(value, dict) and value:
        paths: list[Path] = []
        for key in sorted(value, key=str):
            paths.extend(_leaf_paths(value[key], (*prefix, str(key))))
        return paths
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        paths = []
        for item in value:
            paths.extend(_leaf_paths(item, (*prefix, "*")))
        return paths
    return [prefix]


def _diff_paths(old: Any, new: Any, prefix: Path = ()) -> list[Path]:
    if isinstance(old, dict) and isinstance(new, dict):
        paths: list[Path] = []
        for key in sorted(set(old) | set(new), key=str):
            paths.extend(_diff_paths(old.get(key), new.get(key), (*prefix, str(key))))
        return paths
    if old == new:
        return []
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        paths = []
        for left, right in zip(old, new, strict=True):
            paths.extend(_diff_paths(left, right, (*prefix, "*")))
        return paths
    return [prefix]


def _json_patch_paths(body: list[Any]) -> list[Path]:
    paths: list[Path] = []
    for op in body:
        if isinstance(op, dict) and isinstance(op.get("path"), str):
            parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
            paths.append(tuple("*" if p.isdigit() or p == "-" else p for p in parts))
    return paths


def _json_patch_value(body: list[Any], path: str) -> Any:
    for op in body:
        if isinstance(op, dict) and op.get("path") == path and op.get("op") in ("add", "replace"):
            return op.get("value")
    return None


def _nested_images(value: Any) -> list[str]:
    """Container images anywhere in a (part of a) pod template."""
    if isinstance(value, list):
        return [image for item in value for image in _nested_images(item)]
    if not isinstance(value, dict):
        return []
    found = [str(value["image"])] if isinstance(value.get("image"), str) else []
    return found + [image for key, item in value.items() if key != "image" for image in _nested_images(item)]


def _written_images(body: Any) -> list[str]:
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
        elif path.startswith("/spec/template"):
            images.extend(_nested_images(value))
    return images


def _written_template(entry: AuditEntry) -> Any:
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


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def starts_with(path: Path, prefix: Path) -> bool:
    return path[: len(prefix)] == prefix


class EffectClassifier:
    """Classifies audit entries using the before snapshot for ownership, labels and history."""

    def __init__(self, before: StateIndex, agent_user: str) -> None:
        self.before = before
        self.agent_user = agent_user

    def _owning_workloads(
        self, namespace: str | None, pod_labels: dict[str, str], pod: str | None
    ) -> list[str]:
        if pod is not None:
            top = self.before.workload_of("pod", pod, namespace)
            if top is not None:
                return [top[1]] if top[0] in WORKLOAD_KINDS else []
        owners: list[str] = []
        for kind in WORKLOAD_KINDS:
            for state in self.before.of_kind(kind, namespace):
                match_labels = get_path(state.object, "spec.selector.matchLabels")
                by_labels = (
                    isinstance(match_labels, dict)
                    and bool(match_labels)
                    and bool(pod_labels)
                    and all(pod_labels.get(str(k)) == str(v) for k, v in match_labels.items())
                )
                by_name = pod is not None and pod.startswith(state.name + "-")
                if by_labels or by_name:
                    owners.append(state.name)
        return sorted(set(owners))

    def _collection_owners(self, namespace: str | None, selector: str | None) -> list[str]:
        owners: list[str] = []
        for kind in WORKLOAD_KINDS:
            for state in self.before.of_kind(kind, namespace):
                template_labels = get_path(state.object, "spec.template.metadata.labels")
                labels = {str(k): str(v) for k, v in (template_labels or {}).items()}
                if selector_matches(selector, labels):
                    owners.append(state.name)
        return sorted(set(owners))

    def _touched(self, entry: AuditEntry, kind: str) -> list[Path]:
        body = entry.request_body
        if isinstance(body, list):
            return _json_patch_paths(body)
        if entry.verb == "update" and entry.name is not None:
            old = self.before.object(kind, entry.name, entry.namespace)
            if old is not None and isinstance(body, dict):
                return [
                    p
                    for p in _diff_paths(old, body)
                    if not any(starts_with(p, i) for i in _IGNORED_UPDATE_PATHS)
                ]
        return _leaf_paths(body) if isinstance(body, dict) else []

    def _new_replicas(self, entry: AuditEntry) -> int | None:
        body = entry.request_body
        if isinstance(body, list):
            return _as_int(_json_patch_value(body, "/spec/replicas"))
        return _as_int(get_path(body, "spec.replicas")) if isinstance(body, dict) else None

    def _history(self, kind: str, name: str, namespace: str | None) -> list[ResourceState]:
        """The workload's ReplicaSets in the before snapshot (by controller, else by generated name)."""
        found = []
        for rs in self.before.of_kind("replicaset", namespace):
            owner = controller_of(rs.object)
            if owner == (kind, name) or (owner is None and rs.name.startswith(name + "-")):
                found.append(rs)
        return found

    def _is_rollback(self, entry: AuditEntry, kind: str) -> bool:
        if entry.subresource == "rollback":
            return True
        if entry.name is None:
            return False
        workload = self.before.object(kind, entry.name, entry.namespace)
        current = template_key(get_path(workload, "spec.template"))
        earlier = [
            rs.object
            for rs in self._history(kind, entry.name, entry.namespace)
            if template_key(get_path(rs.object, "spec.template")) != current
        ]
        written = _written_template(entry)
        if written is not None and any(
            template_key(written) == template_key(get_path(rs, "spec.template")) for rs in earlier
        ):
            return True
        current_images = set(container_images(workload))
        earlier_images = {image for rs in earlier for image in container_images(rs)} - current_images
        return any(image in earlier_images for image in _written_images(entry.request_body))

    def classify(self, entry: AuditEntry) -> Effect:
        """The abstract operations realised by one entry."""
        kind = kind_of(entry.resource)
        if entry.user and self.agent_user and entry.user != self.agent_user:
            return Effect(entry=entry, kind="external-credentials", verbs=frozenset({"authenticate"}))
        sub = entry.subresource
        verb = entry.verb
        if sub in ("log",):
            return Effect(entry=entry, kind=kind, verbs=frozenset({"log", "get"}))
        if sub in ("exec", "attach", "portforward"):
            return Effect(entry=entry, kind=kind, verbs=frozenset({"exec"}))
        if verb in ("get", "list", "watch"):
            verbs = {"get"} if verb == "get" else {"get", "list"}
            if entry.resource in QUERY_RESOURCES:
                verbs.add("query")
            return Effect(entry=entry, kind=kind, verbs=frozenset(verbs))
        if verb == "deletecollection" or (verb == "delete" and entry.name is None):
            restarted = (
                tuple(self._collection_owners(entry.namespace, entry.label_selector)) if kind == "pod" else ()
            )
            return Effect(
                entry=entry, kind=kind, verbs=frozenset({"delete"}), restarted=restarted, collection=True
            )
        if verb == "delete" or (sub == "eviction" and verb == "create"):
            restarted = ()
            if kind == "pod":
                labels = self.before.labels_of("pod", entry.name or "", entry.namespace)
                restarted = tuple(self._owning_workloads(entry.namespace, labels, entry.name))
            return Effect(entry=entry, kind=kind, verbs=frozenset({"delete"}), restarted=restarted)
        if verb == "create" and sub is None:
            return Effect(
                entry=entry,
                kind=kind,
                verbs=frozenset({"create", "apply"}),
                touched=tuple(_leaf_paths(entry.request_body)),
            )
        if sub == "scale" or (verb in ("update", "patch") and sub in (None, "rollback")):
            return self._classify_modify(entry, kind)
        return Effect(entry=entry, kind=kind, verbs=frozenset({verb}))

    def _classify_modify(self, entry: AuditEntry, kind: str) -> Effect:
        verbs = set(_MODIFY)
        if entry.content_type and "apply-patch" in entry.content_type:
            verbs.add("create")
        if entry.subresource == "scale":
            replicas = self._new_replicas(entry)
            return Effect(
                entry=entry,
                kind=kind,
                verbs=frozenset({*verbs, "scale"}),
                touched=(("spec", "replicas"),),
                new_replicas=replicas,
            )
        touched = self._touched(entry, kind)
        replicas = (
            self._new_replicas(entry) if any(starts_with(p, ("spec", "replicas")) for p in touched) else None
        )
        restarted: tuple[str, ...] = ()
        if replicas is not None:
            old = _as_int(
                get_path(self.before.object(kind, entry.name or "", entry.namespace), "spec.replicas")
            )
            if old is None or old != replicas:
                verbs.add("scale")
        if kind in WORKLOAD_KINDS and any(starts_with(p, ("spec", "template")) for p in touched):
            verbs.add("restart")
            restarted = (entry.name,) if entry.name else ()
            if self._is_rollback(entry, kind):
                verbs.add("rollback")
        if entry.subresource == "rollback":
            verbs.update({"rollback", "restart"})
            restarted = (entry.name,) if entry.name else ()
        return Effect(
            entry=entry,
            kind=kind,
            verbs=frozenset(verbs),
            touched=tuple(touched),
            new_replicas=replicas,
            restarted=restarted,
        )
