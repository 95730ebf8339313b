"""The one table of resource kinds: what each kind is in Kubernetes and what the project does with it.

A row joins the two names a kind has here: the Kubernetes kind (group/version, plural, scope), which the
sandbox, the gateway and the snapshots use, and the abstract type the SI profile's action grammar and the
scenarios write (`deployment`, `hpa`, `pvc`, ...; interface-types §4.2 plus this project's additions).
Abstract types with no Kubernetes object (the gateway's observability APIs, `external-credentials`) are
rows without a kind. Every other table of kinds in the package is a view of this one (pure data).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceKind:
    """One kind: its Kubernetes identity (if it has one), its abstract type and how the project uses it."""

    kind: str | None  # Kubernetes kind; None for state the gateway serves or an identity pseudo-type
    api_version: str | None  # group/version (`v1` for the core group)
    namespaced: bool
    type: str | None  # the abstract resource type scenarios and actions write; None if they never do
    # Names a request or a record uses for it: the Kubernetes plural first, then the names the gateway's
    # record gives its fixture APIs (`gitops`, `database`). Empty for a pseudo-type.
    resources: tuple[str, ...] = ()
    in_vocabulary: bool = True  # the default action vocabulary names the type (else only its scope counts)
    snapshot: bool = False  # declared objects of this kind are snapshotted before and after the run
    asserted: bool = False  # a verification may name one the twin did not build (the agent creates it)
    events: bool = False  # a declared Event may name an object of this type (involvedObject)

    @property
    def plural(self) -> str:
        """The Kubernetes plural (the first resource name)."""
        return self.resources[0]


def _k8s(
    kind: str,
    api_version: str,
    plural: str,
    type_: str | None,
    *,
    namespaced: bool = True,
    **flags: bool,
) -> ResourceKind:
    return ResourceKind(kind, api_version, namespaced, type_, (plural,), **flags)


def _served(type_: str, *resources: str) -> ResourceKind:
    return ResourceKind(None, None, True, type_, resources)


RBAC = "rbac.authorization.k8s.io/v1"
TABLE: tuple[ResourceKind, ...] = (
    # Cluster-scoped Kubernetes kinds.
    _k8s("Namespace", "v1", "namespaces", "namespace", namespaced=False, snapshot=True),
    _k8s("Node", "v1", "nodes", "node", namespaced=False, snapshot=True, events=True),
    _k8s(
        "PersistentVolume",
        "v1",
        "persistentvolumes",
        "persistentvolume",
        namespaced=False,
        in_vocabulary=False,
    ),
    _k8s("ClusterRole", RBAC, "clusterroles", "clusterrole", namespaced=False),
    _k8s("ClusterRoleBinding", RBAC, "clusterrolebindings", "clusterrolebinding", namespaced=False),
    # Namespaced Kubernetes kinds.
    _k8s("ServiceAccount", "v1", "serviceaccounts", "serviceaccount", snapshot=True),
    _k8s("Role", RBAC, "roles", "role", snapshot=True),
    _k8s("RoleBinding", RBAC, "rolebindings", "rolebinding", snapshot=True),
    _k8s("ConfigMap", "v1", "configmaps", "configmap", snapshot=True, asserted=True, events=True),
    _k8s("Secret", "v1", "secrets", "secret", snapshot=True, asserted=True),
    _k8s("Service", "v1", "services", "service", snapshot=True, asserted=True, events=True),
    _k8s("Endpoints", "v1", "endpoints", None),
    _k8s("EndpointSlice", "discovery.k8s.io/v1", "endpointslices", None),
    _k8s("Event", "v1", "events", "event"),
    _k8s("Pod", "v1", "pods", "pod", snapshot=True, events=True),
    _k8s("PersistentVolumeClaim", "v1", "persistentvolumeclaims", "pvc", snapshot=True),
    _k8s("ResourceQuota", "v1", "resourcequotas", "resourcequota", snapshot=True),
    _k8s("LimitRange", "v1", "limitranges", "limitrange", snapshot=True),
    _k8s("Deployment", "apps/v1", "deployments", "deployment", snapshot=True, asserted=True, events=True),
    _k8s("ReplicaSet", "apps/v1", "replicasets", "replicaset", events=True),
    # Workloads the sandbox's controllers expand (a scenario may declare them; an agent may create them).
    _k8s("StatefulSet", "apps/v1", "statefulsets", "statefulset", snapshot=True, asserted=True, events=True),
    _k8s("DaemonSet", "apps/v1", "daemonsets", "daemonset", snapshot=True, asserted=True, events=True),
    _k8s("Ingress", "networking.k8s.io/v1", "ingresses", "ingress", snapshot=True, asserted=True),
    _k8s(
        "NetworkPolicy",
        "networking.k8s.io/v1",
        "networkpolicies",
        "networkpolicy",
        snapshot=True,
        asserted=True,
    ),
    _k8s(
        "HorizontalPodAutoscaler",
        "autoscaling/v2",
        "horizontalpodautoscalers",
        "hpa",
        snapshot=True,
        asserted=True,
        events=True,
    ),
    _k8s("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", "pdb", snapshot=True, asserted=True),
    # Job: also the job adapter's agent Jobs (in the operator's cluster, never snapshotted).
    _k8s("Job", "batch/v1", "jobs", "job", snapshot=True, asserted=True, events=True),
    _k8s("CronJob", "batch/v1", "cronjobs", "cronjob", snapshot=True, asserted=True, events=True),
    ResourceKind(
        "Application",
        "argoproj.io/v1alpha1",
        True,
        "gitops-application",
        ("applications", "gitops"),
        snapshot=True,
    ),
    # Cluster-scoped types the action vocabulary does not name; their scope still matters at the boundary.
    *(
        ResourceKind(None, None, False, name, in_vocabulary=False)
        for name in (
            "storageclass",
            "customresourcedefinition",
            "priorityclass",
            "ingressclass",
            "apiservice",
        )
    ),
    # State the gateway serves through the APIs agents already speak (no Kubernetes object).
    _served("iac-state", "iac-states", "iacstates"),
    _served("alert", "alerts"),
    _served("trace", "traces"),
    _served("dashboard", "dashboards"),
    _served("metrics", "metrics"),
    _served("logs", "logs"),
    _served("database-migration", "database-migrations", "migrations", "database"),
    _served("runbook", "runbooks"),
    # The identity pseudo-type of `authenticate`: every vocabulary knows it; it lives in no namespace.
    ResourceKind(None, None, False, "external-credentials"),
)


def by_kind() -> dict[str, ResourceKind]:
    """Rows with a Kubernetes kind, by that kind."""
    return {row.kind: row for row in TABLE if row.kind is not None}


def by_type() -> dict[str, ResourceKind]:
    """Rows with an abstract type, by that type."""
    return {row.type: row for row in TABLE if row.type is not None}


# --- views read by the rest of the package -------------------------------------------------------------
# Kubernetes kind → (group/version, plural, namespaced): what the sandbox creates or reads by REST path.
API_RESOURCES: dict[str, tuple[str, str, bool]] = {
    row.kind: (row.api_version, row.plural, row.namespaced)
    for row in TABLE
    if row.kind is not None and row.api_version is not None
}
# Abstract type → the resource names requests use for it (the action grammar's default vocabulary).
TYPE_RESOURCES: dict[str, tuple[str, ...]] = {
    row.type: row.resources for row in TABLE if row.type is not None and row.in_vocabulary and row.resources
}
# Types every vocabulary knows although no resource carries them (the identity of `authenticate`).
PSEUDO_TYPES: frozenset[str] = frozenset(
    row.type for row in TABLE if row.type is not None and row.in_vocabulary and not row.resources
)
# Abstract types outside namespaces: a request for one without a namespace is not an all-namespaces list.
CLUSTER_TYPES: frozenset[str] = frozenset(
    row.type for row in TABLE if row.type is not None and not row.namespaced
)
# Kubernetes kinds whose declared objects are snapshotted.
SNAPSHOT_KINDS: frozenset[str] = frozenset(row.kind for row in TABLE if row.kind and row.snapshot)
# Kubernetes kind → abstract type, for every kind that has both.
KIND_TYPES: dict[str, str] = {row.kind: row.type for row in TABLE if row.kind and row.type}
# Abstract type → Kubernetes kind, for types a verification may name that the twin did not build.
ASSERTED_KINDS: dict[str, str] = {
    row.type: row.kind for row in TABLE if row.type and row.kind and row.asserted
}
# Abstract type → (Kubernetes kind, group/version), for the object a declared Event is about.
EVENT_OBJECTS: dict[str, tuple[str, str]] = {
    row.type: (row.kind, row.api_version)
    for row in TABLE
    if row.type and row.kind and row.api_version and row.events
}
# The short names the API server advertises for a resource (discovery `shortNames`), which kubectl
# accepts wherever it takes a type (`kubectl get deploy`), by Kubernetes plural; `all` is kubectl's
# category of the workload resources (`kubectl get all`), as the API server advertises it.
SHORT_NAMES: dict[str, tuple[str, ...]] = {
    "pods": ("po",),
    "services": ("svc",),
    "deployments": ("deploy",),
    "replicasets": ("rs",),
    "statefulsets": ("sts",),
    "daemonsets": ("ds",),
    "configmaps": ("cm",),
    "namespaces": ("ns",),
    "nodes": ("no",),
    "persistentvolumeclaims": ("pvc",),
    "persistentvolumes": ("pv",),
    "serviceaccounts": ("sa",),
    "endpoints": ("ep",),
    "events": ("ev",),
    "ingresses": ("ing",),
    "networkpolicies": ("netpol",),
    "horizontalpodautoscalers": ("hpa",),
    "poddisruptionbudgets": ("pdb",),
    "cronjobs": ("cj",),
    "resourcequotas": ("quota",),
    "replicationcontrollers": ("rc",),
    "limitranges": ("limits",),
    "storageclasses": ("sc",),
    "customresourcedefinitions": ("crd", "crds"),
    "priorityclasses": ("pc",),
    "ingressclasses": (),
    "applications": ("app", "apps"),
}
CATEGORY_ALL: tuple[str, ...] = (
    "pods",
    "replicationcontrollers",
    "services",
    "daemonsets",
    "deployments",
    "replicasets",
    "statefulsets",
    "horizontalpodautoscalers",
    "cronjobs",
    "jobs",
)
