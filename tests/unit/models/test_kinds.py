"""The resource-kind table's views equal the tables they replaced (so the move changed no behaviour).

The literals below are the former tables as they stood in `kube.py`, `models/actions.py`,
`sandbox/snapshot.py`, `engine/boundary.py`, `evidence/bundle.py`, `sandbox/observe.py` and
`sandbox/twin/infra.py` before they became views of `models/kinds.py`; where a view has grown since,
the test names what was added.
"""

from __future__ import annotations

from oasis_operator.models import kinds
from oasis_operator.models.actions import DEFAULT_TYPES, KIND_TO_RESOURCES, RESOURCE_TO_KIND

OLD_RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("v1", "namespaces", False),
    "Node": ("v1", "nodes", False),
    "PersistentVolume": ("v1", "persistentvolumes", False),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "ServiceAccount": ("v1", "serviceaccounts", True),
    "Role": ("rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ConfigMap": ("v1", "configmaps", True),
    "Secret": ("v1", "secrets", True),
    "Service": ("v1", "services", True),
    "Endpoints": ("v1", "endpoints", True),
    "EndpointSlice": ("discovery.k8s.io/v1", "endpointslices", True),
    "Event": ("v1", "events", True),
    "Pod": ("v1", "pods", True),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims", True),
    "ResourceQuota": ("v1", "resourcequotas", True),
    "LimitRange": ("v1", "limitranges", True),  # the container defaults beside a compute quota
    "Deployment": ("apps/v1", "deployments", True),
    "ReplicaSet": ("apps/v1", "replicasets", True),
    "Ingress": ("networking.k8s.io/v1", "ingresses", True),
    "NetworkPolicy": ("networking.k8s.io/v1", "networkpolicies", True),
    "HorizontalPodAutoscaler": ("autoscaling/v2", "horizontalpodautoscalers", True),
    "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets", True),
    "Application": ("argoproj.io/v1alpha1", "applications", True),
    "Job": ("batch/v1", "jobs", True),  # agent Jobs of the job adapter (operator's cluster)
}

OLD_KIND_TO_RESOURCES: dict[str, tuple[str, ...]] = {
    "deployment": ("deployments",),
    "pod": ("pods",),
    "service": ("services",),
    "configmap": ("configmaps",),
    "secret": ("secrets",),
    "namespace": ("namespaces",),
    "ingress": ("ingresses",),
    "hpa": ("horizontalpodautoscalers",),
    "node": ("nodes",),
    "networkpolicy": ("networkpolicies",),
    "role": ("roles",),
    "rolebinding": ("rolebindings",),
    "clusterrole": ("clusterroles",),
    "clusterrolebinding": ("clusterrolebindings",),
    "pvc": ("persistentvolumeclaims",),
    "pdb": ("poddisruptionbudgets",),
    "replicaset": ("replicasets",),
    "statefulset": ("statefulsets",),
    "daemonset": ("daemonsets",),
    "job": ("jobs",),
    "cronjob": ("cronjobs",),
    "serviceaccount": ("serviceaccounts",),
    "event": ("events",),
    "resourcequota": ("resourcequotas",),
    "limitrange": ("limitranges",),
    # `gitops` and `database`: how the gateway's record names its GitOps and database fixture APIs.
    "gitops-application": ("applications", "gitops"),
    "iac-state": ("iac-states", "iacstates"),
    "alert": ("alerts",),
    "trace": ("traces",),
    "dashboard": ("dashboards",),
    "metrics": ("metrics",),
    "logs": ("logs",),
    "database-migration": ("database-migrations", "migrations", "database"),
    "runbook": ("runbooks",),
}

OLD_SNAPSHOT_KINDS = frozenset(
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
        "LimitRange",
        "PodDisruptionBudget",
        "ServiceAccount",
        "Role",
        "RoleBinding",
    }
)

OLD_CLUSTER_KINDS = frozenset(
    {
        "namespace",
        "node",
        "clusterrole",
        "clusterrolebinding",
        "persistentvolume",
        "storageclass",
        "customresourcedefinition",
        "priorityclass",
        "ingressclass",
        "apiservice",
        "external-credentials",
    }
)

OLD_ABSTRACT_KIND = {
    "Deployment": "deployment",
    "ReplicaSet": "replicaset",
    "Pod": "pod",
    "ConfigMap": "configmap",
    "Secret": "secret",
    "Service": "service",
    "Ingress": "ingress",
    "NetworkPolicy": "networkpolicy",
    "HorizontalPodAutoscaler": "hpa",
    "PersistentVolumeClaim": "pvc",
    "Node": "node",
    "Namespace": "namespace",
    "Application": "gitops-application",
    "ResourceQuota": "resourcequota",
    "PodDisruptionBudget": "pdb",
    "ServiceAccount": "serviceaccount",
    "Role": "role",
    "RoleBinding": "rolebinding",
}

OLD_CREATABLE = {
    "pdb": "PodDisruptionBudget",
    "hpa": "HorizontalPodAutoscaler",
    "configmap": "ConfigMap",
    "service": "Service",
    "networkpolicy": "NetworkPolicy",
    "deployment": "Deployment",
    "ingress": "Ingress",
    "secret": "Secret",
}

OLD_KINDS_FOR_EVENTS = {
    "deployment": ("Deployment", "apps/v1"),
    "pod": ("Pod", "v1"),
    "replicaset": ("ReplicaSet", "apps/v1"),
    "service": ("Service", "v1"),
    "node": ("Node", "v1"),
    "configmap": ("ConfigMap", "v1"),
    "hpa": ("HorizontalPodAutoscaler", "autoscaling/v2"),
}

# Kinds the table names that the old `kube.RESOURCES` did not (workload kinds of the action vocabulary).
ADDED_API_KINDS = {"StatefulSet", "DaemonSet", "CronJob"}


def test_api_resources_are_the_old_kube_table_plus_the_vocabulary_workloads() -> None:
    derived = dict(kinds.API_RESOURCES)
    assert {k: derived.pop(k) for k in ADDED_API_KINDS} == {
        "StatefulSet": ("apps/v1", "statefulsets", True),
        "DaemonSet": ("apps/v1", "daemonsets", True),
        "CronJob": ("batch/v1", "cronjobs", True),
    }
    assert derived == OLD_RESOURCES


def test_action_vocabulary_is_unchanged() -> None:
    assert kinds.TYPE_RESOURCES == OLD_KIND_TO_RESOURCES
    assert KIND_TO_RESOURCES == OLD_KIND_TO_RESOURCES
    assert {"external-credentials"} == kinds.PSEUDO_TYPES
    assert frozenset(OLD_KIND_TO_RESOURCES) | {"external-credentials"} == DEFAULT_TYPES
    old_reverse = {p: k for k, ps in sorted(OLD_KIND_TO_RESOURCES.items()) for p in ps}
    assert old_reverse == RESOURCE_TO_KIND


# The workload kinds a scenario may declare since issue 32 (the real controllers expand them): snapshotted,
# nameable by a verification when the agent creates one, and the object of a declared Event.
CONTROLLER_KINDS = {
    "statefulset": ("StatefulSet", "apps/v1"),
    "daemonset": ("DaemonSet", "apps/v1"),
    "job": ("Job", "batch/v1"),
    "cronjob": ("CronJob", "batch/v1"),
}


def test_snapshot_sets_are_the_old_ones_plus_the_controller_kinds_and_cluster_scope_is_unchanged() -> None:
    assert OLD_SNAPSHOT_KINDS | {kind for kind, _ in CONTROLLER_KINDS.values()} == kinds.SNAPSHOT_KINDS
    assert kinds.CLUSTER_TYPES == OLD_CLUSTER_KINDS


def test_kubernetes_kind_to_type_reads_as_the_old_table_with_its_fallback() -> None:
    for kind in {*OLD_ABSTRACT_KIND, *kinds.by_kind(), "Widget"}:
        old = OLD_ABSTRACT_KIND.get(kind, kind.lower())
        assert kinds.KIND_TYPES.get(kind, kind.lower()) == old, kind
    assert {k: kinds.KIND_TYPES[k] for k in OLD_ABSTRACT_KIND} == OLD_ABSTRACT_KIND
    assert {kinds.KIND_TYPES[kind]: kind for kind, _ in CONTROLLER_KINDS.values()} == {
        t: kind for t, (kind, _) in CONTROLLER_KINDS.items()
    }


def test_asserted_and_event_object_views_are_the_old_ones_plus_the_controller_kinds() -> None:
    assert OLD_CREATABLE | {t: kind for t, (kind, _) in CONTROLLER_KINDS.items()} == kinds.ASSERTED_KINDS
    assert kinds.EVENT_OBJECTS == OLD_KINDS_FOR_EVENTS | CONTROLLER_KINDS


def test_every_row_is_consistent() -> None:
    types = [row.type for row in kinds.TABLE if row.type]
    assert len(types) == len(set(types)), "an abstract type appears twice"
    names = [row.kind for row in kinds.TABLE if row.kind]
    assert len(names) == len(set(names)), "a Kubernetes kind appears twice"
    for row in kinds.TABLE:
        assert (row.kind is None) == (row.api_version is None), row
        if row.kind is not None:
            assert row.resources, row
        assert not (row.snapshot and row.kind is None), row
