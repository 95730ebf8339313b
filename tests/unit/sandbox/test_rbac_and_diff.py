"""Agent RBAC derived from scope and mode; snapshot normalisation and diffs (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.models.environment import AgentServiceAccount, Environment, NamespaceBinding
from oasis_operator.sandbox.rbac import READ_VERBS, agent_objects, grants_forbidden_power
from oasis_operator.sandbox.snapshot import ResourceSnapshot, declared_changes, diff, normalise
from tests.unit.sandbox.test_twin import plan_of, profile


def env(mode: str) -> Environment:
    return Environment(
        id="e1234567",
        prefix="sbx",
        scenario_id="s",
        control_namespace="sbx-e1234567",
        namespaces=(
            NamespaceBinding(
                declared="frontend", sandbox="sbx-e1234567-frontend", zone="zone-a", in_scope=True
            ),
            NamespaceBinding(
                declared="payments", sandbox="sbx-e1234567-payments", zone="zone-b", in_scope=False
            ),
        ),
        agent=AgentServiceAccount(namespace="sbx-e1234567", service_account="agent"),
        mode=mode,
        created_at="2026-11-29T12:00:00Z",
    )


def _by_kind(objects: list[tuple[str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [body for k, body in objects if k == kind]


def test_roles_only_in_scope_namespaces() -> None:
    objects = agent_objects(env("autonomous"))
    roles = _by_kind(objects, "Role")
    assert [r["metadata"]["namespace"] for r in roles] == ["sbx-e1234567-frontend"]
    binding = _by_kind(objects, "RoleBinding")[0]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "agent", "namespace": "sbx-e1234567"}]
    verbs = {v for rule in roles[0]["rules"] for v in rule["verbs"]}
    assert {"patch", "delete", "deletecollection"} <= verbs


def test_read_only_mode_cannot_write() -> None:
    roles = _by_kind(agent_objects(env("read-only")), "Role")
    verbs = {v for rule in roles[0]["rules"] for v in rule["verbs"]}
    assert verbs == set(READ_VERBS)


def test_no_mode_grants_escape_powers() -> None:
    for mode in ("autonomous", "supervised", "read-only"):
        for kind, body in agent_objects(env(mode)):
            if kind in ("Role", "ClusterRole"):
                assert grants_forbidden_power(body["rules"]) == [], (mode, kind)
    assert grants_forbidden_power([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}]) == [
        "writes on nodes"
    ]
    assert grants_forbidden_power([{"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate"]}])


def test_every_shipped_scenario_gets_rbac_only_for_its_scope() -> None:
    for s in profile().scenarios:
        plan = plan_of(s)
        scope = set(s.preconditions.agent.scope.namespaces if s.preconditions.agent.scope else [])
        assert {b.declared for b in plan.namespaces if b.in_scope} == scope, s.id


def test_normalise_drops_churn_and_renames() -> None:
    live = {
        "metadata": {
            "name": "web",
            "namespace": "sbx-e1234567-frontend",
            "resourceVersion": "812",
            "uid": "u",
            "managedFields": [{}],
            "creationTimestamp": "t",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        },
        "spec": {"replicas": 3},
        "status": {"readyReplicas": 2},
    }
    assert normalise(live, {"sbx-e1234567-frontend": "frontend"}) == {
        "metadata": {"name": "web", "namespace": "frontend"},
        "spec": {"replicas": 3},
    }


def test_diff_classifies_changes() -> None:
    def snap(name: str, obj: dict[str, Any] | None) -> ResourceSnapshot:
        return ResourceSnapshot(
            kind="ConfigMap", namespace="default", name=name, exists=obj is not None, object=obj
        )

    before = [
        snap("a", {"data": {"LOG_LEVEL": "info", "TIMEOUT": "30"}}),
        snap("b", {"data": {}}),
        snap("c", {}),
    ]
    after = [snap("a", {"data": {"LOG_LEVEL": "warn", "TIMEOUT": "30"}}), snap("b", None), snap("c", {}),
             snap("d", {"data": {}})]  # fmt: skip
    result = {d.name: d for d in diff(before, after)}
    assert result["a"].change == "modified"
    assert [(f.path, f.before, f.after) for f in result["a"].fields] == [("data.LOG_LEVEL", "info", "warn")]
    assert (result["b"].change, result["c"].change, result["d"].change) == ("deleted", "unchanged", "created")


def _owned(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}]


def test_normalise_keeps_controller_references_and_drops_bookkeeping_owners() -> None:
    live_pod = {
        "metadata": {
            "name": "web-5d8f6c7b9-2xk4p",
            "namespace": "sbx-e1234567-frontend",
            "ownerReferences": _owned("ReplicaSet", "web-5d8f6c7b9"),
        },
        "spec": {"nodeName": "sbx-e1234567-node-1"},
    }
    renames = {"sbx-e1234567-frontend": "frontend", "sbx-e1234567-node-1": "node-1"}
    assert normalise(live_pod, renames) == {
        "metadata": {
            "name": "web-5d8f6c7b9-2xk4p",
            "namespace": "frontend",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f6c7b9", "controller": True}
            ],
        },
        "spec": {"nodeName": "node-1"},
    }
    # A declared namespace is owned by the sandbox's control namespace: bookkeeping, never shown.
    owner = {"apiVersion": "v1", "kind": "Namespace", "name": "sbx-e1234567", "uid": "u"}
    namespace = {"metadata": {"name": "sbx-e1234567-frontend", "ownerReferences": [owner]}}
    assert normalise(namespace, renames) == {"metadata": {"name": "frontend"}}


def test_a_node_is_not_modified_by_the_ttl_controllers_annotation() -> None:
    # The TTL controller annotates each new Node on its own, after provisioning wrote it: not a change.
    written = {"metadata": {"name": "sbx-e1234567-node-1", "labels": {"zone": "a"}}, "spec": {}}
    annotated = {
        **written,
        "metadata": {**written["metadata"], "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
    }
    renames = {"sbx-e1234567-node-1": "node-1"}
    assert normalise(annotated, renames) == normalise(written, renames)
    before = [ResourceSnapshot(kind="Node", namespace=None, name="node-1", exists=True,
                               object=normalise(written, renames))]  # fmt: skip
    after = [ResourceSnapshot(kind="Node", namespace=None, name="node-1", exists=True,
                              object=normalise(annotated, renames))]  # fmt: skip
    assert [d.change for d in diff(before, after)] == ["unchanged"]


def _snap(kind: str, name: str, obj: dict[str, Any] | None) -> ResourceSnapshot:
    return ResourceSnapshot(kind=kind, namespace="default", name=name, exists=obj is not None, object=obj)


def _workload_state(template_hash: str, pods: list[str]) -> list[ResourceSnapshot]:
    rs = f"web-{template_hash}"
    return [
        _snap("ReplicaSet", rs, {"metadata": {"ownerReferences": _owned("Deployment", "web")}, "spec": {}}),
        *(
            _snap("Pod", f"{rs}-{p}", {"metadata": {"ownerReferences": _owned("ReplicaSet", rs)}})
            for p in pods
        ),
    ]


def test_diff_attributes_controller_churn_to_the_declared_workload() -> None:
    web_before = _snap("Deployment", "web", {"spec": {"template": {}}})
    web_after = _snap("Deployment", "web", {"spec": {"template": {"metadata": {"annotations": {"r": "1"}}}}})
    config = _snap("ConfigMap", "settings", {"data": {"A": "1"}})
    before = [web_before, config, *_workload_state("aaa", ["p1", "p2"])]
    # After a restart: the old pods are gone, a new ReplicaSet runs new pods; and the agent made a pod.
    stray = _snap("Pod", "debug", {"spec": {"containers": []}})
    orphan = _snap("Pod", "job-x-1", {"metadata": {"ownerReferences": _owned("Job", "job-x")}})
    after = [web_after, config, *_workload_state("aaa", []), *_workload_state("bbb", ["p3", "p4"])]
    changes = diff(before, [*after, stray, orphan])
    by_name = {d.name: d for d in changes}
    assert (by_name["web-aaa-p1"].change, by_name["web-aaa-p1"].owner) == ("deleted", "Deployment/web")
    assert (by_name["web-bbb-p3"].change, by_name["web-bbb-p3"].owner) == ("created", "Deployment/web")
    assert (by_name["web-bbb"].change, by_name["web-bbb"].owner) == ("created", "Deployment/web")
    assert by_name["web"].owner is None
    # What is left once controller churn is set aside: the agent's restart, its pod, and a pod whose
    # controller the snapshots do not hold.
    assert [(d.kind, d.name, d.change) for d in declared_changes(changes)] == [
        ("Deployment", "web", "modified"),
        ("Pod", "debug", "created"),
        ("Pod", "job-x-1", "created"),
    ]


def _verbs_on(mode: str, group: str, resource: str) -> set[str]:
    role = _by_kind(agent_objects(env(mode)), "Role")[0]
    return {
        verb
        for rule in role["rules"]
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_a_writing_agent_acts_on_every_workload_kind_as_on_deployments() -> None:
    deployments = _verbs_on("autonomous", "apps", "deployments")
    assert {"create", "patch", "update", "delete"} <= deployments
    for group, resource in [
        ("apps", "statefulsets"),
        ("apps", "statefulsets/scale"),
        ("apps", "daemonsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
    ]:
        assert _verbs_on("autonomous", group, resource) == deployments, resource
        assert _verbs_on("read-only", group, resource) == set(READ_VERBS), resource
    # Revisions are read (`kubectl rollout history`, `undo`), never written: undo patches the workload.
    assert _verbs_on("autonomous", "apps", "controllerrevisions") == set(READ_VERBS)


def test_diff_attributes_pods_and_jobs_to_statefulsets_daemonsets_and_cronjobs() -> None:
    def owned(kind: str, name: str, owner: str | None) -> ResourceSnapshot:
        meta = {"ownerReferences": _owned(*owner.split("/"))} if owner else {}
        return _snap(kind, name, {"metadata": meta, "spec": {}})

    declared = [
        owned("StatefulSet", "db", None),
        owned("DaemonSet", "agent", None),
        owned("CronJob", "backup", None),
    ]
    before = [*declared, owned("Pod", "db-0", "StatefulSet/db"), owned("Pod", "agent-x1", "DaemonSet/agent")]
    # After: db-0 replaced (same name, new object is unchanged in spec), the agent pod replaced, and
    # the CronJob ran once: a Job and its pod.
    after = [
        *declared,
        owned("Pod", "db-0", "StatefulSet/db"),
        owned("Pod", "agent-y2", "DaemonSet/agent"),
        owned("Job", "backup-29410950", "CronJob/backup"),
        owned("Pod", "backup-29410950-abcde", "Job/backup-29410950"),
        owned("Job", "adhoc", None),  # `kubectl create job adhoc`: the agent's own act
    ]
    changes = {d.name: (d.change, d.owner) for d in diff(before, after)}
    assert changes["agent-x1"] == ("deleted", "DaemonSet/agent")
    assert changes["agent-y2"] == ("created", "DaemonSet/agent")
    assert changes["db-0"] == ("unchanged", "StatefulSet/db")
    assert changes["backup-29410950"] == ("created", "CronJob/backup")
    assert changes["backup-29410950-abcde"] == ("created", "CronJob/backup")
    assert [(d.kind, d.name) for d in declared_changes(diff(before, after))] == [("Job", "adhoc")]


def test_no_mode_grants_exec_attach_or_port_forward() -> None:
    for mode in ("autonomous", "supervised", "read-only"):
        roles = _by_kind(agent_objects(env(mode)), "Role")
        resources = {r for role in roles for rule in role["rules"] for r in rule["resources"]}
        assert not resources & {"pods/exec", "pods/attach", "pods/portforward"}, mode
