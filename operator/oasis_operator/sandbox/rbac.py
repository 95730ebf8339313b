"""The agent's identity and permissions in its sandbox, derived from the scenario's scope and mode.

Zones become RBAC: the agent's ServiceAccount gets a Role in each namespace its scope names and nothing in
the others. A read-only agent may only get, list and watch. Whatever the mode, the agent never receives
rights on RBAC objects, impersonation, escalation or binding, node writes or namespace create/delete: those
would let it leave the zone that the scenario tests. `exec`/`attach`/`port-forward` into pods are granted
only where the scenario grants them (`x-oasis-operator.connect`), and then only in the agent's zone; the
gateway serves them itself (`gateway.apis.connect`), so no command ever runs.
"""

from __future__ import annotations

from oasis_operator.models.environment import Environment
from oasis_operator.models.verbs import REQUEST_READ_VERBS, REQUEST_WRITE_VERBS
from oasis_operator.sandbox.twin.plan import Body

AGENT_SERVICE_ACCOUNT = "agent"
ROLE_NAME = "operations"
READ_VERBS = list(REQUEST_READ_VERBS)
READ_ONLY_MODES = frozenset({"read-only", "read_only", "readonly"})

# What an operations agent works with, by API group: readable in zone, writable in zone unless read-only.
READABLE: dict[str, list[str]] = {
    "": [
        "pods",
        "pods/log",
        "services",
        "endpoints",
        "configmaps",
        "secrets",
        "events",
        "persistentvolumeclaims",
        "resourcequotas",
        "limitranges",
        "serviceaccounts",
        "replicationcontrollers",
    ],
    "apps": [
        "deployments",
        "deployments/scale",
        "replicasets",
        "statefulsets",
        "statefulsets/scale",
        "daemonsets",
        "controllerrevisions",  # a StatefulSet's and a DaemonSet's revisions (`kubectl rollout history`)
    ],
    "batch": ["jobs", "cronjobs"],
    "autoscaling": ["horizontalpodautoscalers"],
    "networking.k8s.io": ["ingresses", "networkpolicies"],
    "policy": ["poddisruptionbudgets"],
    "events.k8s.io": ["events"],
    "discovery.k8s.io": ["endpointslices"],
    "argoproj.io": ["applications"],
}
WRITABLE: dict[str, list[str]] = {
    "": ["pods", "pods/eviction", "services", "configmaps", "secrets", "persistentvolumeclaims"],
    # Every workload kind as a Deployment: the object, its scale, what its controller makes.
    "apps": [
        "deployments",
        "deployments/scale",
        "replicasets",
        "statefulsets",
        "statefulsets/scale",
        "daemonsets",
    ],
    "batch": ["jobs", "cronjobs"],
    "autoscaling": ["horizontalpodautoscalers"],
    "networking.k8s.io": ["ingresses", "networkpolicies"],
    "policy": ["poddisruptionbudgets"],
    "argoproj.io": ["applications"],
}
FORBIDDEN_VERBS = frozenset({"impersonate", "escalate", "bind", "*"})
FORBIDDEN_GROUPS = frozenset({"rbac.authorization.k8s.io", "*"})


def is_read_only(mode: str) -> bool:
    return mode.strip().lower() in READ_ONLY_MODES


# kubectl opens exec, attach and port-forward with a websocket upgrade (a GET); the API server checks
# `create` on the subresource, and `get` as well for the upgrade.
CONNECT_VERBS = ["create", "get"]


def _rules(read_only: bool, connect: frozenset[str] = frozenset()) -> list[Body]:
    rules = [{"apiGroups": [g], "resources": sorted(r), "verbs": READ_VERBS} for g, r in READABLE.items()]
    if not read_only:
        rules += [
            {"apiGroups": [g], "resources": sorted(r), "verbs": list(REQUEST_WRITE_VERBS)}
            for g, r in WRITABLE.items()
        ]
    # pods/exec, pods/attach or pods/portforward only as the scenario grants them, whatever the mode (the
    # gateway refuses the others, guards.py), so `kubectl auth can-i create pods/exec` tells the truth.
    if connect:
        resources = sorted(f"pods/{sub}" for sub in connect)
        rules.append({"apiGroups": [""], "resources": resources, "verbs": CONNECT_VERBS})
    return rules


def _subject(env: Environment) -> list[Body]:
    return [{"kind": "ServiceAccount", "name": env.agent.service_account, "namespace": env.agent.namespace}]


def agent_objects(env: Environment) -> list[tuple[str, Body]]:
    """(kind, body) of the ServiceAccount, per-namespace Roles/RoleBindings and cluster-scoped read access."""
    read_only = is_read_only(env.mode)
    connect = env.connect.subresources() if env.connect is not None else frozenset()
    objects: list[tuple[str, Body]] = [
        (
            "ServiceAccount",
            {"metadata": {"name": env.agent.service_account, "namespace": env.agent.namespace}},
        )
    ]
    for binding in env.namespaces:
        if not binding.in_scope:
            continue
        meta = {"name": ROLE_NAME, "namespace": binding.sandbox}
        objects.append(("Role", {"metadata": meta, "rules": _rules(read_only, connect)}))
        objects.append(
            (
                "RoleBinding",
                {
                    "metadata": meta,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME},
                    "subjects": _subject(env),
                },
            )
        )
    cluster_name = f"{env.prefix}-{env.id}-{AGENT_SERVICE_ACCOUNT}"  # unique per environment
    nodes = sorted(o.sandbox for o in env.cluster_objects if o.kind == "Node")
    volumes = sorted(o.sandbox for o in env.cluster_objects if o.kind == "PersistentVolume")
    namespaces = sorted(b.sandbox for b in env.namespaces)
    cluster_rules: list[Body] = [
        # Lists are answered by the gateway, which shows only this environment's objects.
        {
            "apiGroups": [""],
            "resources": ["nodes", "namespaces", "persistentvolumes"],
            "verbs": ["list", "watch"],
        },
        {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": namespaces, "verbs": ["get"]},
    ]
    if nodes:
        cluster_rules.append(
            {"apiGroups": [""], "resources": ["nodes"], "resourceNames": nodes, "verbs": ["get"]}
        )
    if volumes:
        cluster_rules.append(
            {
                "apiGroups": [""],
                "resources": ["persistentvolumes"],
                "resourceNames": volumes,
                "verbs": ["get"],
            }
        )
    objects.append(("ClusterRole", {"metadata": {"name": cluster_name}, "rules": cluster_rules}))
    objects.append(
        (
            "ClusterRoleBinding",
            {
                "metadata": {"name": cluster_name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": cluster_name,
                },
                "subjects": _subject(env),
            },
        )
    )
    return objects


def grants_forbidden_power(rules: list[Body]) -> list[str]:
    """Rules that would let the agent escape its zone (used by tests and as a guard before applying)."""
    problems = []
    for rule in rules:
        if FORBIDDEN_VERBS & set(rule.get("verbs", [])):
            problems.append(f"verbs {sorted(FORBIDDEN_VERBS & set(rule['verbs']))}")
        if FORBIDDEN_GROUPS & set(rule.get("apiGroups", [])):
            problems.append(f"apiGroups {sorted(FORBIDDEN_GROUPS & set(rule['apiGroups']))}")
        if "nodes" in rule.get("resources", []) and set(rule.get("verbs", [])) - set(READ_VERBS):
            problems.append("writes on nodes")
        if "namespaces" in rule.get("resources", []) and set(rule.get("verbs", [])) - set(READ_VERBS):
            problems.append("namespace create/delete")
    return problems
