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


def test_crashloop_on_missing_key_is_consistent() -> None:
    plan = plan_of(scenario("infra.capability.da.single-signal-diagnosis-001"))
    crashing = pods(plan, "notification-service-")
    assert len(crashing) == 2
    status = crashing[0].status or {}
    c = status["containerStatuses"][0]
    assert c["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert c["lastState"]["terminated"]["exitCode"] == 1
    assert c["restartCount"] >= 5
    env = {e["name"]: e for e in crashing[0].body["spec"]["containers"][0]["env"]}
    assert env["SMTP_PORT"]["valueFrom"]["configMapKeyRef"] == {"key": "SMTP_PORT", "name": "smtp-config"}
    cm = next(o for o in plan.objects if o.kind == "ConfigMap" and o.name == "smtp-config")
    assert "SMTP_PORT" not in cm.body["data"]
    deploy = next(o for o in plan.objects if o.kind == "Deployment" and o.name == "notification-service")
    assert (deploy.status or {}).get("readyReplicas", 0) == 0
    assert (deploy.status or {})["unavailableReplicas"] == 2
    events = [o for o in plan.objects if o.kind == "Event" and o.body["reason"] == "BackOff"]
    assert {e.body["involvedObject"]["name"] for e in events} == {p.name for p in crashing}


@pytest.mark.parametrize(
    ("status", "expect"),
    [
        ("running", {"ready": 3}),
        ("degraded", {"ready": 2}),
        ("OOMKilled", {"ready": 0, "terminated": "OOMKilled"}),
        ("pending", {"ready": 0, "unschedulable": True}),
        ("error", {"ready": 0, "terminated": "Error"}),
        ("elevated_error_rate", {"ready": 3}),
    ],
)
def test_each_declared_status(status: str, expect: dict[str, Any]) -> None:
    plan = plan_of(
        custom([{"resource": "deployment/api", "namespace": "default", "status": status, "replicas": 3}])
    )
    api_pods = pods(plan, "api-")
    assert len(api_pods) == 3
    deploy = next(o for o in plan.objects if o.kind == "Deployment")
    assert (deploy.status or {}).get("readyReplicas", 0) == expect["ready"]
    first = api_pods[0].status or {}
    if expect.get("unschedulable"):
        assert "nodeName" not in api_pods[0].body["spec"]
        cond = first["conditions"][0]
        assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    else:
        assert api_pods[0].body["spec"]["nodeName"].startswith("sbx-e1234567-node-")
    if "terminated" in expect:
        assert first["containerStatuses"][0]["state"]["terminated"]["reason"] == expect["terminated"]


def test_revision_history_and_rollback_target() -> None:
    plan = plan_of(scenario("infra.capability.ca.historical-context-001"))
    replica_sets = [o for o in plan.objects if o.kind == "ReplicaSet" and o.name.startswith("order-service-")]
    images = [rs.body["spec"]["template"]["spec"]["containers"][0]["image"] for rs in replica_sets]
    assert images == ["order-service:v4.1.9", "order-service:v4.2.0"]
    revisions = [
        rs.body["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in replica_sets
    ]
    assert revisions == ["1", "2"]
    assert replica_sets[0].body["spec"]["replicas"] == 0
    scaled = next(o for o in plan.objects if o.kind == "Event" and o.body["reason"] == "ScalingReplicaSet")
    assert scaled.body["lastTimestamp"] == "2026-11-29T11:35:00Z"


def test_service_endpoints_follow_ready_pods() -> None:
    plan = plan_of(custom([
        {"resource": "deployment/web", "namespace": "default", "status": "degraded", "replicas": 3},
        {"resource": "service/web", "namespace": "default", "selector": {"app": "web"}},
        {"resource": "service/empty", "namespace": "default", "endpoints": []},
    ]))  # fmt: skip
    web = next(o for o in plan.objects if o.kind == "Endpoints" and o.name == "web")
    assert len(web.body["subsets"][0]["addresses"]) == 2
    empty = next(o for o in plan.objects if o.kind == "Endpoints" and o.name == "empty")
    assert "subsets" not in empty.body
    slices = {o.body["metadata"]["labels"]["kubernetes.io/service-name"]: o
              for o in plan.objects if o.kind == "EndpointSlice"}  # fmt: skip
    assert slices["web"].api_version == "discovery.k8s.io/v1"
    web_ips = sorted(a["ip"] for a in web.body["subsets"][0]["addresses"])
    assert sorted(e["addresses"][0] for e in slices["web"].body["endpoints"]) == web_ips
    assert all(e["conditions"]["ready"] for e in slices["web"].body["endpoints"])
    assert slices["empty"].body["endpoints"] == []


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
            {"resource": "hpa/x", "namespace": "default", "target": "statefulset/db"},
            "target must be deployment",
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
