"""Read-only views of resource state: snapshot indexes and dotted-path field access.

Snapshots hold the declared resources and the ReplicaSets, Jobs and Pods of the declared namespaces.
Objects a controller made carry a controller owner reference (``metadata.ownerReferences``); that is what
marks them as derived, and what ties a pod to its ReplicaSet and that to its Deployment (or a pod to its
StatefulSet, DaemonSet or Job, and a Job to its CronJob). Checks look objects up by
the names the scenario declares, so derived objects count only where a check names them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oasis_operator.models.actions import RESOURCE_TO_KIND
from oasis_operator.models.evidence import ResourceState

# Fixture APIs served by the gateway for non-Kubernetes state; reads of these are `query` operations.
QUERY_RESOURCES: frozenset[str] = frozenset({"metrics", "traces", "dashboards", "alerts", "logs"})

RBAC_KINDS: tuple[str, ...] = ("role", "rolebinding", "clusterrole", "clusterrolebinding")


def kind_of(resource: str) -> str:
    """Abstract type for a plural API resource (unknown plurals map to themselves)."""
    return RESOURCE_TO_KIND.get(resource, resource)


def get_path(obj: Any, path: str) -> Any:
    """Value at a dotted path (``spec.template.spec.containers.0.image``), or None when absent."""
    current = obj
    for part in path.split("."):
        if isinstance(current, dict):
            current = current.get(part)
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current


def container_images(obj: dict[str, Any] | None) -> list[str]:
    """Images of a workload's pod template (or of a pod), in container order."""
    if obj is None:
        return []
    spec = get_path(obj, "spec.template.spec") or obj.get("spec") or {}
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list):
        return []
    return [str(c.get("image")) for c in containers if isinstance(c, dict) and c.get("image") is not None]


def image_matches(actual: str, expected: str) -> bool:
    """An image reference matches when equal, or when one ends with '/'+other (registry prefix)."""
    return actual == expected or actual.endswith("/" + expected) or expected.endswith("/" + actual)


def controller_of(obj: dict[str, Any] | None) -> tuple[str, str] | None:
    """(type, name) of the object's controlling owner (a Pod's replicaset, a ReplicaSet's deployment)."""
    refs = get_path(obj, "metadata.ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") and ref.get("name"):
            return str(ref["kind"]).lower(), str(ref["name"])
    return None


def template_key(template: Any) -> Any:
    """A pod template compared as the Deployment controller does: without the pod-template-hash label."""
    if not isinstance(template, dict):
        return template
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != "pod-template-hash"}
    metadata = {k: v for k, v in metadata.items() if k != "labels" and v is not None}
    if labels:
        metadata["labels"] = labels
    return {**template, "metadata": metadata}


class StateIndex:
    """Lookup of resource states by (kind, name, namespace); namespace None matches any."""

    def __init__(self, states: Iterable[ResourceState]) -> None:
        self._states = list(states)

    @property
    def states(self) -> list[ResourceState]:
        return list(self._states)

    def find(self, kind: str, name: str, namespace: str | None = None) -> ResourceState | None:
        """The first state with this kind and name (and namespace when given)."""
        for state in self._states:
            if state.kind != kind or state.name != name:
                continue
            if namespace is not None and state.namespace not in (namespace, None):
                continue
            return state
        return None

    def of_kind(self, kind: str, namespace: str | None = None) -> list[ResourceState]:
        """All states of one kind, sorted by (namespace, name) for a stable order."""
        found = [
            s for s in self._states if s.kind == kind and (namespace is None or s.namespace == namespace)
        ]
        return sorted(found, key=lambda s: (s.namespace or "", s.name))

    def object(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object of a state, None when unknown or absent."""
        state = self.find(kind, name, namespace)
        return state.object if state is not None else None

    def is_derived(self, kind: str, name: str, namespace: str | None = None) -> bool:
        """True for an object a controller made (it has a controller owner reference)."""
        return controller_of(self.object(kind, name, namespace)) is not None

    def workload_of(self, kind: str, name: str, namespace: str | None = None) -> tuple[str, str] | None:
        """(type, name) at the top of the object's controller chain (a Pod's deployment).

        None when nothing controls the object, or when a link of the chain is not in the index.
        """
        owner = controller_of(self.object(kind, name, namespace))
        seen: set[tuple[str, str]] = set()
        while owner is not None and owner not in seen:
            seen.add(owner)
            parent = self.find(owner[0], owner[1], namespace)
            if parent is None or parent.object is None:
                return None
            above = controller_of(parent.object)
            if above is None:
                return owner
            owner = above
        return None

    def labels_of(self, kind: str, name: str, namespace: str | None = None) -> dict[str, str]:
        """metadata.labels of an object (empty when unknown)."""
        labels = get_path(self.object(kind, name, namespace), "metadata.labels")
        return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def selector_matches(selector: str | None, labels: dict[str, str]) -> bool:
    """Equality-based label selector (``a=b,c!=d,e``) against a label map; None/'' selects all."""
    if not selector:
        return True
    for raw in selector.split(","):
        term = raw.strip()
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.strip().lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


_POD_SPECS = ("spec", "spec.template.spec", "spec.jobTemplate.spec.template.spec")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def container_fields(obj: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Containers of a pod or pod template, keyed by (pod spec path, container list, container name)."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for spec_path in _POD_SPECS:
        spec = get_path(obj, spec_path) if isinstance(obj, dict) else None
        if not isinstance(spec, dict):
            continue
        for list_name in _CONTAINER_LISTS:
            containers = spec.get(list_name)
            for index, container in enumerate(containers if isinstance(containers, list) else []):
                if isinstance(container, dict):
                    name = str(container.get("name", index))
                    found[(spec_path, list_name, name)] = container
    return found


def declared_shape(obj: dict[str, Any] | None) -> dict[str, Any]:
    """Declared-scenario keys derived from a Kubernetes object (see module docstring)."""
    if obj is None:
        return {}
    images = container_images(obj)
    shape: dict[str, Any] = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    shape.update(
        {
            "replicas": get_path(obj, "spec.replicas"),
            "affinity": get_path(obj, "spec.template.spec.affinity"),
            "image": images[0] if images else None,
            "images": images,
            "labels": get_path(obj, "metadata.labels"),
            "annotations": get_path(obj, "metadata.annotations"),
            "sync_status": get_path(obj, "status.sync.status"),
        }
    )
    return shape


def read_path(obj: dict[str, Any] | None, path: str | None) -> Any:
    """Path on the object, falling back to the declared shape; the whole object when path is None."""
    if path is None:
        return obj
    found = get_path(obj, path)
    return found if found is not None else get_path(declared_shape(obj), path)
