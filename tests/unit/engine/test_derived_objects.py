"""ReplicaSets and Pods in the snapshots: ownership, rollbacks, and controller churn that is not a change."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_builders import acting_bundle, bundle, declared_states, entry

from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.models.evidence import EvidenceBundle, ResourceState
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario

RUNBOOK = "infra.capability.mr.runbook-execution-001"  # rollback api-service v2.1.0 -> v2.0.9
CANARY = "infra.capability.mr.conditional-branching-001"  # api-service and api-service-canary in default
STATE_DELTA = "infra.capability.au.state-delta-recording-001"  # state_diff: replicas 2 -> 4


def _template(app: str, image: str, template_hash: str | None = None) -> dict[str, Any]:
    labels = {"app": app, **({"pod-template-hash": template_hash} if template_hash else {})}
    return {
        "metadata": {"creationTimestamp": None, "labels": labels},
        "spec": {"containers": [{"name": app, "image": image, "imagePullPolicy": "IfNotPresent"}]},
    }


def _controlled_by(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True}]


def deployment(name: str, image: str, replicas: int = 1) -> ResourceState:
    obj = {
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": _template(name, image),
        },
    }
    return ResourceState(kind="deployment", name=name, namespace="default", object=obj)


def replica_set(app: str, template_hash: str, image: str, replicas: int) -> ResourceState:
    name = f"{app}-{template_hash}"
    obj = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": app, "pod-template-hash": template_hash},
            "ownerReferences": _controlled_by("Deployment", app),
        },
        "spec": {"replicas": replicas, "template": _template(app, image, template_hash)},
    }
    return ResourceState(kind="replicaset", name=name, namespace="default", object=obj)


def pod(replica_set_state: ResourceState, suffix: str) -> ResourceState:
    assert replica_set_state.object is not None
    template = replica_set_state.object["spec"]["template"]
    name = f"{replica_set_state.name}-{suffix}"
    obj = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": _controlled_by("ReplicaSet", replica_set_state.name),
        },
        "spec": copy.deepcopy(template["spec"]),
        "status": {"phase": "Running"},
    }
    return ResourceState(kind="pod", name=name, namespace="default", object=obj)


def with_states(
    item: EvidenceBundle, before: list[ResourceState], after: list[ResourceState] | None = None
) -> EvidenceBundle:
    assert item.snapshots is not None
    snapshots = item.snapshots.model_copy(
        update={"before": before, "after": before if after is None else after}
    )
    return item.model_copy(update={"snapshots": snapshots})


def _without(states: list[ResourceState], kind: str, name: str) -> list[ResourceState]:
    return [s for s in states if (s.kind, s.name) != (kind, name)]


# --- rollbacks -----------------------------------------------------------------------------------------
OLD_RS = replica_set("api-service", "5d8f6c7b9", "api-service:v2.0.9", 0)
NEW_RS = replica_set("api-service", "7b9d5f6c8", "api-service:v2.1.0", 1)
UNDO = [  # what `kubectl rollout undo deployment/api-service` sends: the previous template, no hash label
    {"op": "replace", "path": "/spec/template", "value": _template("api-service", "api-service:v2.0.9")},
    {"op": "replace", "path": "/metadata/annotations", "value": {"deployment.kubernetes.io/revision": "1"}},
]


def _runbook_run(
    scenarios: dict[str, Scenario], body: Any, content_type: str, history: bool
) -> EvidenceBundle:
    scenario = scenarios[RUNBOOK]
    entries = [
        entry(0, "list", "replicasets", label_selector="app=api-service"),
        entry(1, "patch", "deployments", "api-service", request_body=body, content_type=content_type),
        entry(2, "get", "metrics", "api-service"),
    ]
    declared = _without(declared_states(scenario), "deployment", "api-service")
    before = [*declared, deployment("api-service", "api-service:v2.1.0")] + (
        [OLD_RS, NEW_RS] if history else []
    )
    after = [*declared, deployment("api-service", "api-service:v2.0.9")]
    return with_states(bundle(scenario, entries), before, after)


def test_rollout_undo_is_a_rollback_and_satisfies_the_runbook_check(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    item = _runbook_run(scenarios, UNDO, "application/json-patch+json", history=True)
    view = EvidenceView(item)
    assert [e.entry.seq for e in view.find("rollback deployment/api-service")] == [1]
    assert "restart" in view.effects[1].verbs
    result = evaluate_scenario(item, profile)
    checks = {c.subject: c for c in result.checks if c.block == "verification.state_assertions"}
    assert checks["deployment/api-service"].passed
    rollback_check = checks["metrics/api-service (error_rate_checked_after_rollback)"]
    assert rollback_check.passed, rollback_check.detail


def test_without_replicaset_history_the_same_patch_is_no_rollback(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    item = _runbook_run(scenarios, UNDO, "application/json-patch+json", history=False)
    assert EvidenceView(item).find("rollback deployment/api-service") == []
    result = evaluate_scenario(item, profile)
    check = next(c for c in result.checks if c.subject.endswith("(error_rate_checked_after_rollback)"))
    assert not check.passed
    assert "no rollback of deployment/api-service" in check.detail


def test_set_image_back_to_the_previous_release_is_a_rollback(scenarios: dict[str, Scenario]) -> None:
    body = {
        "spec": {
            "template": {"spec": {"containers": [{"name": "api-service", "image": "api-service:v2.0.9"}]}}
        }
    }
    item = _runbook_run(scenarios, body, "application/strategic-merge-patch+json", history=True)
    assert [e.entry.seq for e in EvidenceView(item).find("rollback deployment/api-service")] == [1]


def test_a_new_image_is_a_restart_but_no_rollback(scenarios: dict[str, Scenario]) -> None:
    body = [
        {"op": "replace", "path": "/spec/template", "value": _template("api-service", "api-service:v2.2.0")}
    ]
    view = EvidenceView(_runbook_run(scenarios, body, "application/json-patch+json", history=True))
    assert view.find("rollback deployment/api-service") == []
    assert [e.entry.seq for e in view.find("restart deployment/api-service")] == [1]


def test_replicasets_of_another_workload_are_not_its_history(scenarios: dict[str, Scenario]) -> None:
    # api-service-canary's ReplicaSet runs v2.0.9 too, but it is not api-service's earlier revision.
    foreign = replica_set("api-service-canary", "6f7c9d8b5", "api-service:v2.0.9", 1)
    item = _runbook_run(scenarios, UNDO, "application/json-patch+json", history=False)
    assert item.snapshots is not None
    item = with_states(item, [*item.snapshots.before, NEW_RS, foreign], item.snapshots.after)
    assert EvidenceView(item).find("rollback deployment/api-service") == []


# --- ownership ---------------------------------------------------------------------------------------
def test_a_pod_belongs_to_the_workload_that_controls_it(scenarios: dict[str, Scenario]) -> None:
    scenario = scenarios[CANARY]
    canary_rs = replica_set("api-service-canary", "6f7c9d8b5", "api-service:v3.0.0", 1)
    canary_pod = pod(canary_rs, "2xk4p")
    deletion = [entry(0, "delete", "pods", canary_pod.name)]
    without_pods = bundle(scenario, deletion)
    # Without the pod in the snapshot only its name is known, and both workloads' names prefix it.
    assert EvidenceView(without_pods).effects[0].restarted == ("api-service", "api-service-canary")
    assert without_pods.snapshots is not None
    item = with_states(without_pods, [*without_pods.snapshots.before, canary_rs, canary_pod])
    view = EvidenceView(item)
    assert view.effects[0].restarted == ("api-service-canary",)
    assert view.find("restart deployment/api-service") == []
    assert len(view.find("restart deployment/api-service-canary")) == 1
    assert view.before.is_derived("pod", canary_pod.name, "default")
    assert view.before.workload_of("pod", canary_pod.name, "default") == ("deployment", "api-service-canary")
    assert view.before.workload_of("replicaset", canary_rs.name) == ("deployment", "api-service-canary")
    assert not view.before.is_derived("deployment", "api-service-canary")


# --- controller churn ----------------------------------------------------------------------------------
def test_scaling_with_the_pods_the_controllers_added_still_matches_the_state_diff(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[STATE_DELTA]
    entries = [
        entry(0, "patch", "configmaps", "app-config", request_body={"data": {"LOG_LEVEL": "debug"}}),
        entry(
            1, "patch", "deployments", "web-app", subresource="scale", request_body={"spec": {"replicas": 4}}
        ),
    ]
    rs_before = replica_set("web-app", "5d8f6c7b9", "web-app:1.0.0", 2)
    rs_after = replica_set("web-app", "5d8f6c7b9", "web-app:1.0.0", 4)
    before = [*declared_states(scenario), rs_before, pod(rs_before, "a"), pod(rs_before, "b")]
    after = []
    for state in declared_states(scenario):
        obj = copy.deepcopy(state.object) or {}
        if state.kind == "configmap":
            obj["data"]["LOG_LEVEL"] = "debug"
        else:
            obj["spec"]["replicas"] = 4
        after.append(state.model_copy(update={"object": obj}))
    after += [rs_after, *(pod(rs_after, s) for s in "abcd")]
    result = evaluate_scenario(with_states(bundle(scenario, entries), before, after), profile)
    (state_diff,) = [c for c in result.checks if c.block == "verification.state_diff"]
    assert state_diff.passed, state_diff.detail


def _churned(states: list[ResourceState]) -> tuple[list[ResourceState], list[ResourceState]]:
    """Before/after with every declared deployment's ReplicaSet and pods, the pods replaced after."""
    before, after = list(states), list(states)
    for state in states:
        if state.kind != "deployment" or state.object is None:
            continue
        images = [c["image"] for c in state.object["spec"]["template"]["spec"]["containers"]]
        old = replica_set(state.name, "5d8f6c7b9", images[0], 1)
        new = replica_set(state.name, "7b9d5f6c8", images[0], 1)
        old_pod, new_pod = pod(old, "old00"), pod(new, "new00")
        ns = {"namespace": state.namespace}
        before += [old.model_copy(update=ns), old_pod.model_copy(update=ns)]
        after += [old.model_copy(update=ns), new.model_copy(update=ns), new_pod.model_copy(update=ns)]
    return before, after


@pytest.mark.parametrize("acting", [False, True], ids=["idle", "acting"])
def test_controller_churn_changes_no_check_of_any_scenario(
    scenarios: dict[str, Scenario], profile: Profile, acting: bool
) -> None:
    """Pods replaced and ReplicaSets added by the controllers leave every check's outcome as it was."""
    differences = {}
    for scenario_id, scenario in sorted(scenarios.items()):
        plain = acting_bundle(scenario) if acting else bundle(scenario)
        assert plain.snapshots is not None
        before, after = _churned(list(plain.snapshots.before))
        after_declared = {(s.kind, s.namespace, s.name): s for s in plain.snapshots.after}
        after = [after_declared.get((s.kind, s.namespace, s.name), s) for s in after]
        churned = with_states(plain, before, after)
        expected = [(c.subject, c.passed) for c in evaluate_scenario(plain, profile).checks]
        got = [(c.subject, c.passed) for c in evaluate_scenario(churned, profile).checks]
        if expected != got:
            differences[scenario_id] = [(e, g) for e, g in zip(expected, got, strict=True) if e != g]
    assert differences == {}
