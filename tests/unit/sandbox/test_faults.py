"""The causes → symptoms table, and the kwok Stage each cause becomes (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from oasis_operator.models.environment import AgentServiceAccount, Environment, NamespaceBinding
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.faults import (
    RULES,
    Cause,
    WorkloadFault,
    after_pods,
    fault_stages,
    faults_of,
    memory_bytes,
    stage_name,
    touches_pods,
)
from oasis_operator.sandbox.kwok import fault_names, world
from oasis_operator.sandbox.twin import parse_twin_state
from tests.unit.sandbox.test_twin import custom, profile, scenario

ENV = Environment(
    id="abc123",
    prefix="sbx",
    scenario_id="s",
    control_namespace="sbx-control",
    namespaces=(NamespaceBinding(declared="d", sandbox="sbx-abc123-d", in_scope=True),),
    agent=AgentServiceAccount(namespace="sbx-control", service_account="agent-e1"),
    mode="autonomous",
    created_at="2026-01-01T00:00:00Z",
)
LABELS = {"env": "abc123"}


def _f(cause: Cause, **kw: Any) -> WorkloadFault:
    return WorkloadFault(namespace="d", workload="w", cause=cause, **kw)


def faults_from_scenario(s: Scenario) -> list[WorkloadFault]:
    """The faults of a scenario's state, parsed as provisioning parses it."""
    return faults_of(parse_twin_state(s))


def selector(stage: dict[str, Any]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A Stage's requirements by key: (operator, values)."""
    return {
        e["key"]: (e["operator"], tuple(e.get("values") or ()))
        for e in stage["spec"]["selector"]["matchExpressions"]
    }


def test_missing_key_is_found_from_the_declared_config() -> None:
    faults = faults_from_scenario(scenario("infra.capability.da.single-signal-diagnosis-001"))
    fault = next(f for f in faults if f.workload == "notification-service")
    assert (fault.cause, fault.config_map, fault.config_key) == (
        Cause.MISSING_CONFIG_KEY,
        "smtp-config",
        "SMTP_PORT",
    )


def test_bad_release_needs_no_stage_its_pods_run() -> None:
    fault = next(f for f in faults_from_scenario(scenario("infra.capability.ca.historical-context-001")))
    assert (fault.cause, fault.previous_image) == (Cause.BAD_RELEASE, "order-service:v4.1.9")
    assert fault_stages(ENV, fault, LABELS) == []


def test_a_fault_stage_names_the_workloads_pods_and_wins_over_the_lifecycle() -> None:
    (stage,) = fault_stages(ENV, _f(Cause.CRASH, restarts=7), LABELS)
    req = selector(stage)
    assert req[".metadata.namespace"] == ("In", ("sbx-abc123-d",))
    assert req['.metadata.labels["app"]'] == ("In", ("w",))
    assert req[".metadata.deletionTimestamp"] == ("DoesNotExist", ())
    assert stage["spec"]["weight"] == 1
    assert stage["metadata"] == {"name": stage_name(ENV, _f(Cause.CRASH)), "labels": LABELS}
    # The declared restart count seeds the first crash; later ones count up from the pod's own.
    assert "@RESTARTS@" not in stage["spec"]["next"]["statusTemplate"]
    assert "{{ else }}7{{ end }}" in stage["spec"]["next"]["statusTemplate"]
    assert stage["spec"]["next"]["event"]["reason"] == "BackOff"


def test_an_oom_stage_reads_the_memory_limit_so_raising_it_cures() -> None:
    (stage,) = fault_stages(ENV, _f(Cause.MEMORY_LIMIT, memory_limit="256Mi"), LABELS)
    keys = [k for k in selector(stage) if "limits.memory" in k]
    assert len(keys) == 1
    assert keys[0].endswith("<= 268435456)")
    assert "OOMKilled" in stage["spec"]["next"]["statusTemplate"]


def test_a_rollout_stage_spares_a_restart_and_other_images() -> None:
    (stage,) = fault_stages(ENV, _f(Cause.ROLLOUT_IN_PROGRESS, image="web:2"), LABELS)
    req = selector(stage)
    assert req[".spec.containers[0].image"] == ("In", ("web:2",))
    assert req['.metadata.annotations["kubectl.kubernetes.io/restartedAt"]'] == ("DoesNotExist", ())


def test_stages_of_pods_that_exist_wait_for_them() -> None:
    assert fault_stages(ENV, _f(Cause.UNHEALTHY_REPLICA), LABELS) == []
    (one,) = fault_stages(ENV, _f(Cause.UNHEALTHY_REPLICA), LABELS, ["w-b", "w-a"])
    assert selector(one)[".metadata.name"] == ("In", ("w-a",))  # exactly one replica
    assert fault_stages(ENV, _f(Cause.PULL_FAILS_ON_RESTART), LABELS) == []
    (later,) = fault_stages(ENV, _f(Cause.PULL_FAILS_ON_RESTART), LABELS, ["w-a"])
    assert selector(later)[".metadata.name"] == ("NotIn", ("w-a",))  # only pods made after


def test_an_ordered_statefulset_crashes_once_all_its_pods_are_up() -> None:
    # OrderedReady makes pod n+1 once pod n is Ready, which a pod crashing from its first start never is:
    # every replica crash-looping is a set that was up, then began to crash on the running pods.
    state = [
        {"resource": "namespace/shop"},
        {"resource": "statefulset/db", "namespace": "shop", "replicas": 3, "status": "CrashLoopBackOff"},
        {"resource": "statefulset/cache", "namespace": "shop", "replicas": 3, "status": "OOMKilled",
         "resource_limits": {"memory": "64Mi"}, "pod_management_policy": "Parallel"},
        {"resource": "statefulset/queue", "namespace": "shop", "replicas": 2, "status": "ImagePullBackOff"},
        {"resource": "deployment/web", "namespace": "shop", "replicas": 3, "status": "CrashLoopBackOff"},
    ]  # fmt: skip
    faults = {f.workload: f for f in faults_from_scenario(custom(state, scope=["shop"]))}
    assert {name: (f.kind, f.ordered) for name, f in faults.items()} == {
        "db": ("StatefulSet", True),
        "cache": ("StatefulSet", False),
        "queue": ("StatefulSet", True),
        "web": ("Deployment", False),
    }
    assert {name: (after_pods(f), touches_pods(f)) for name, f in faults.items()} == {
        "db": (True, True),  # a crash: Stage once the set is up, kwok made to look at its running pods
        "cache": (False, False),  # Parallel: all pods at once, crashing from their first start
        "queue": (False, False),  # never Ready: only its first pod is ever made (symptoms says so)
        "web": (False, False),
    }
    # A crash Stage names no pods: made later, it is the same Stage.
    assert fault_stages(ENV, faults["db"], LABELS) == fault_stages(ENV, faults["db"], LABELS, ["db-0"])


def test_a_pod_declared_on_its_own_is_named() -> None:
    (stage,) = fault_stages(ENV, _f(Cause.IMAGE_PULL, kind="Pod"), LABELS)
    assert selector(stage)[".metadata.name"] == ("In", ("w",))


@pytest.mark.parametrize(("text", "expected"), [("256Mi", 268435456), ("1k", 1000), ("3T", 3 * 10**12)])
def test_memory_quantities_use_the_kubernetes_parser(text: str, expected: int) -> None:
    assert memory_bytes(text) == expected


def test_every_stage_template_the_table_names_is_in_the_data() -> None:
    assert {r.stage for r in RULES.values() if r.stage} <= set(fault_names())
    assert {"oom"} <= set(world()["faults"])


def test_every_unhealthy_shipped_workload_has_a_cause() -> None:
    for s in profile().scenarios:
        causes = {f.workload: f.cause for f in faults_from_scenario(s)}
        for entry in s.preconditions.environment.state:
            kind, _, name = entry.resource.partition("/")
            status = (entry.model_extra or {}).get("status")
            if kind == "deployment" and status not in (None, "running"):
                assert name in causes, (s.id, name, status)


def test_an_image_pull_stage_names_the_image_so_another_one_cures() -> None:
    state = [
        {"resource": "deployment/web", "namespace": "d", "status": "ImagePullBackOff", "image": "web:9.9.9"},
        {"resource": "deployment/api", "namespace": "d", "status": "ImagePullBackOff",
         "containers": [{"name": "api", "image": "api:bad"}]},
    ]  # fmt: skip
    faults = {f.workload: f for f in faults_of(parse_twin_state(custom(state, scope=["d"])))}
    assert (faults["web"].cause, faults["web"].image) == (Cause.IMAGE_PULL, "web:9.9.9")
    assert faults["api"].image == "api:bad"
    (stage,) = fault_stages(ENV, faults["web"], LABELS)
    assert selector(stage)[".spec.containers[0].image"] == ("In", ("web:9.9.9",))
