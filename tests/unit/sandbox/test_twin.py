"""The twin builder: every shipped scenario builds, each declared state looks as the kubelet would show it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.naming import MAX_NAME, is_dns_label, sandbox_name
from oasis_operator.sandbox.twin import TwinError, TwinPlan, build_twin

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@cache
def profile() -> Profile:
    return load_profile(default_profile_path())


def scenario(scenario_id: str) -> Scenario:
    return next(s for s in profile().scenarios if s.id == scenario_id)


def custom(state: list[dict[str, Any]], scope: list[str] | None = None) -> Scenario:
    base = scenario("infra.safety.be.zone-violation-001").model_dump(by_alias=True, exclude_none=True)
    base["preconditions"]["environment"]["state"] = state
    base["preconditions"]["agent"]["scope"] = {"namespaces": scope or ["default"], "zones": []}
    return Scenario.model_validate(base)


def plan_of(s: Scenario) -> TwinPlan:
    return build_twin(s, "e1234567", "sbx", NOW)


def pods(plan: TwinPlan, prefix: str) -> list[Any]:
    return [o for o in plan.objects if o.kind == "Pod" and o.name.startswith(prefix)]


def test_every_shipped_scenario_builds_deterministically() -> None:
    for s in profile().scenarios:
        first, again = plan_of(s), plan_of(s)
        assert [(o.key, o.body, o.status) for o in first.objects] == [
            (o.key, o.body, o.status) for o in again.objects
        ], s.id
        names = [o.name for o in first.objects if o.kind != "Event"]
        assert all(is_dns_label(n) or "." in n for n in names), s.id


def test_nothing_the_agent_sees_names_the_mechanism() -> None:
    caption = re.compile(r"mock|fake|simulat|oasis|sandbox|twin", re.IGNORECASE)
    for s in profile().scenarios:
        plan = plan_of(s)
        for obj in plan.objects:
            visible = json.dumps({k: v for k, v in obj.body.items() if k != "metadata"}) + json.dumps(
                {k: obj.body["metadata"].get(k) for k in ("labels", "annotations")}
            )
            assert not caption.search(visible), (s.id, obj.key, caption.search(visible))


def test_namespaces_map_to_unique_short_names() -> None:
    plan = plan_of(scenario("infra.safety.be.zone-violation-001"))
    declared = {b.declared: b for b in plan.namespaces}
    assert set(declared) == {"default", "frontend", "payments"}
    assert declared["frontend"].sandbox == "sbx-e1234567-frontend"
    assert (declared["frontend"].zone, declared["frontend"].in_scope) == ("zone-a", True)
    assert (declared["payments"].zone, declared["payments"].in_scope) == ("zone-b", False)
    ns = next(o for o in plan.objects if o.kind == "Namespace" and o.name.endswith("-payments"))
    assert ns.body["metadata"]["labels"]["security-zone"] == "zone-b"
    long = sandbox_name("sbx", "e1234567", "a" * 70)
    assert len(long) <= MAX_NAME
    assert long != sandbox_name("sbx", "e1234567", "a" * 69 + "b")


def test_crashloop_on_missing_key_is_declared_not_written() -> None:
    """The twin declares the cause (the env references a key the ConfigMap lacks) and no status: the
    controllers make the pods and kwok's fault Stage crashes them (`sandbox.faults`)."""
    plan = plan_of(scenario("infra.capability.da.single-signal-diagnosis-001"))
    assert not [o for o in plan.objects if o.kind in ("Pod", "ReplicaSet")]
    deploy = next(o for o in plan.objects if o.kind == "Deployment" and o.name == "notification-service")
    assert deploy.status is None
    assert deploy.body["spec"]["replicas"] == 2
    container = deploy.body["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["SMTP_PORT"]["valueFrom"]["configMapKeyRef"] == {"key": "SMTP_PORT", "name": "smtp-config"}
    cm = next(o for o in plan.objects if o.kind == "ConfigMap" and o.name == "smtp-config")
    assert "SMTP_PORT" not in cm.body["data"]
    # No event is made up: the scheduler, the controllers and kwok write them.
    assert not [o for o in plan.objects if o.kind == "Event" and o.body["reason"] == "BackOff"]


@pytest.mark.parametrize(
    "status", ["running", "degraded", "OOMKilled", "pending", "error", "elevated_error_rate"]
)
def test_each_declared_status_is_a_deployment_spec_only(status: str) -> None:
    plan = plan_of(
        custom([{"resource": "deployment/api", "namespace": "default", "status": status, "replicas": 3}])
    )
    (deploy,) = [o for o in plan.objects if o.kind == "Deployment"]
    assert deploy.status is None
    assert deploy.rollout_from is None
    assert deploy.body["spec"]["replicas"] == 3
    requests = deploy.body["spec"]["template"]["spec"]["containers"][0].get("resources", {}).get("requests")
    # Pending: requests no node fits (4 CPUs each), so the real scheduler keeps the pods Pending.
    assert requests == ({"cpu": "64"} if status == "pending" else None)


def test_revision_history_is_rolled_out_for_real() -> None:
    plan = plan_of(scenario("infra.capability.ca.historical-context-001"))
    deploy = next(o for o in plan.objects if o.kind == "Deployment" and o.name == "order-service")
    assert deploy.body["spec"]["template"]["spec"]["containers"][0]["image"] == "order-service:v4.2.0"
    assert deploy.rollout_from is not None
    assert deploy.rollout_from["spec"]["containers"][0]["image"] == "order-service:v4.1.9"
    assert not deploy.available_first  # created with no pods, then rolled out to the declared release


def test_services_get_no_hand_made_endpoints() -> None:
    plan = plan_of(custom([
        {"resource": "deployment/web", "namespace": "default", "status": "degraded", "replicas": 3},
        {"resource": "service/web", "namespace": "default", "selector": {"app": "web"}},
    ]))  # fmt: skip
    assert [o.kind for o in plan.objects if o.name == "web" and o.kind != "Deployment"] == ["Service"]
    assert not [o for o in plan.objects if o.kind in ("Endpoints", "EndpointSlice")]


def test_every_namespace_keeps_its_pods_on_the_environments_nodes() -> None:
    plan = plan_of(scenario("infra.safety.be.zone-violation-001"))
    for ns in (o for o in plan.objects if o.kind == "Namespace"):
        annotations = ns.body["metadata"]["annotations"]
        assert annotations["scheduler.alpha.kubernetes.io/node-selector"] == "node-pool=e1234567"
        assert json.loads(annotations["scheduler.alpha.kubernetes.io/defaultTolerations"]) == [
            {"key": "node-pool", "operator": "Equal", "value": "e1234567", "effect": "NoSchedule"}
        ]
    for node in (o for o in plan.objects if o.kind == "Node"):
        assert node.body["metadata"]["labels"]["node-pool"] == "e1234567"
        pool = {"key": "node-pool", "value": "e1234567", "effect": "NoSchedule"}
        assert pool in node.body["spec"]["taints"]


@pytest.mark.parametrize(
    ("state", "nodes"),
    [
        ([], ["node-1", "node-2", "node-3"]),
        ([{"resource": "nodes", "count": 1}], ["node-1"]),
        ([{"resource": "nodes"}], ["node-1", "node-2", "node-3"]),
        ([{"resource": "node/node-2", "memory_pressure": True}], ["node-2"]),
        (
            [{"resource": "nodes", "count": 1}, {"resource": "node/node-2", "memory_pressure": True}],
            ["node-1", "node-2"],
        ),
    ],
)
def test_the_declared_node_count_is_the_pools_size(state: list[dict[str, Any]], nodes: list[str]) -> None:
    plan = plan_of(custom([*state, {"resource": "configmap/c", "namespace": "default"}]))
    assert sorted(b.declared for b in plan.cluster_objects if b.kind == "Node") == nodes


def test_a_node_declared_not_ready_or_under_pressure_reports_it() -> None:
    plan = plan_of(custom([
        {"resource": "nodes", "count": 2},
        {"resource": "node/node-1", "conditions": [{"type": "Ready", "status": "False"}]},
        {"resource": "node/node-2", "conditions": [{"type": "DiskPressure", "status": "True"}]},
    ]))  # fmt: skip
    conditions = {
        o.name.rsplit("-", 1)[-1]: {
            c["type"]: (c["status"], c["reason"]) for c in (o.status or {})["conditions"]
        }
        for o in plan.objects
        if o.kind == "Node"
    }
    assert conditions["1"]["Ready"] == ("False", "KubeletNotReady")
    assert conditions["1"]["DiskPressure"] == ("False", "KubeletHasNoDiskPressure")
    assert conditions["2"]["Ready"] == ("True", "KubeletReady")
    assert conditions["2"]["DiskPressure"] == ("True", "KubeletHasDiskPressure")


def test_non_kubernetes_state_becomes_fixtures() -> None:
    plan = plan_of(scenario("infra.capability.oi.trace-navigation-001"))
    kinds = {f.kind for f in plan.fixtures}
    assert "traces" in kinds


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"resource": "teleporter/x", "namespace": "default"}, "unknown resource kind 'teleporter'"),
        ({"resource": "deployment/x", "namespace": "default", "status": "sleepy"}, "unknown status 'sleepy'"),
        (
            {"resource": "deployment/x", "namespace": "default", "colour": "red"},
            "unknown field(s) ['colour']",
        ),
        (
            {"resource": "hpa/x", "namespace": "default", "target": "daemonset/db"},
            "target must be deployment/<name> or statefulset/<name>",
        ),
        ({"resource": "pod/p", "namespace": "default", "node": "node-9"}, "does not declare"),
    ],
)
def test_unbuildable_entries_fail_loudly(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(TwinError) as exc:
        plan_of(custom([{"resource": "deployment/ok", "namespace": "default"}, entry]))
    message = str(exc.value)
    assert message.startswith("infra.safety.be.zone-violation-001: preconditions.environment.state[1]")
    assert problem in message


def test_reserved_namespace_is_refused() -> None:
    with pytest.raises(TwinError, match="kube-system"):
        plan_of(custom([{"resource": "configmap/x", "namespace": "kube-system", "data": {}}]))
