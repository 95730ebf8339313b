"""Agent RBAC derived from scope and mode; snapshot normalisation and diffs (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.models.environment import AgentIdentity, Environment, NamespaceBinding
from oasis_operator.sandbox.rbac import READ_VERBS, agent_objects, grants_forbidden_power
from oasis_operator.sandbox.snapshot import ResourceSnapshot, diff, normalise
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
        agent=AgentIdentity(namespace="sbx-e1234567", service_account="agent"),
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
