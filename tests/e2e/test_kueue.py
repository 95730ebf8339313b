"""OASISEvaluations admitted by the real Kueue manager (built by hack/build-kueue.sh) on the local plane.

Each test has a ClusterQueue of its own, with quota for N scenario slots (the operator's default slot is
1 CPU and 1 Gi), and a LocalQueue in the test's namespace. The evaluations run one scenario (or eight,
to be interrupted mid-run) with the careful reference agent, so each needs one slot (`spec.parallelism`
1). Covered: quota bounds how many run; a deleted evaluation frees its quota; a missing LocalQueue or
priority class is a condition and starts nothing; preemption by a higher priority and deactivation of
the Workload stop the run cleanly and it resumes without re-running finished scenarios; a queue label
changed after admission is not honoured; an operator restart loses neither an admitted nor a waiting one.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.kueue_workload import workload_name
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.localcluster.kueue import missing_kueue, start_kueue
from oasis_operator.models.crd import EvaluationRef
from tests.cluster_fixtures import Cluster, wait_for
from tests.e2e.support import (
    OperatorProcess,
    agent_command,
    condition,
    create,
    environments_of,
    evaluation,
    events,
    get,
    wait_done,
    wait_phase,
)

pytestmark = pytest.mark.skipif(
    missing_kueue() is not None, reason=f"Kueue is not built here: {missing_kueue()}"
)
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
RUNNING = {"Preflight", "Safety", "Capability"}


@pytest.fixture(scope="module")
def kueue(cluster: Cluster, api: ApiClient) -> None:
    """Kueue's manager beside the test plane (stopped with the plane, which stops it first)."""
    plane = cluster.plane or LocalControlPlane(run_dir=cluster.kubeconfig.parent)
    start_kueue(plane)


@pytest.fixture
def queue(custom: CustomObjectsApi, namespace: str, kueue: None) -> Iterator[Callable[..., str]]:
    """`queue(slots, preempt=False)`: a ClusterQueue with quota for `slots` slots (preempting lower
    priorities with `preempt`) and its LocalQueue; its name."""
    made: list[tuple[str, str]] = []

    def make(slots: int, preempt: bool = False) -> str:
        name = f"q-{uuid.uuid4().hex[:8]}"
        flavor = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": name}}
        custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", flavor)
        made.append(("resourceflavors", name))
        resources = [
            {"name": "cpu", "nominalQuota": str(slots)},
            {"name": "memory", "nominalQuota": f"{slots}Gi"},
        ]
        cluster_queue = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "preemption": {"withinClusterQueue": "LowerPriority" if preempt else "Never"},
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [{"name": name, "resources": resources}],
                    }
                ],
            },
        }
        custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", cluster_queue)
        made.append(("clusterqueues", name))
        local = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": name},
            "spec": {"clusterQueue": name},
        }
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", local)
        return name

    yield make
    # The priority classes a test made (cluster-scoped) go too.
    made.extend(("workloadpriorityclasses", n) for n in _PRIORITIES.pop(namespace, []))
    for plural, name in reversed(made):
        try:
            custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
        except ApiException as exc:
            if exc.status != 404:
                raise


_PRIORITIES: dict[str, list[str]] = {}


def _priority(custom: CustomObjectsApi, namespace: str, value: int) -> str:
    """A WorkloadPriorityClass of `value` for this test (removed with its queue); its name."""
    name = f"p{value}-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadPriorityClass", "metadata": {"name": name}}
    custom.create_cluster_custom_object(GROUP, VERSION, "workloadpriorityclasses", {**body, "value": value})
    _PRIORITIES.setdefault(namespace, []).append(name)
    return name


def _queued(name: str, queue_name: str, **labels: str) -> dict[str, Any]:
    body = evaluation(name, agent_command("careful"), scenarios=ONE)
    body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue_name, **labels}
    return body


def _workload(custom: CustomObjectsApi, namespace: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    name = workload_name(EvaluationRef.of(obj))
    try:
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def _when(workload: dict[str, Any], kind: str) -> datetime.datetime:
    found = next(c for c in workload["status"]["conditions"] if c["type"] == kind and c["status"] == "True")
    return datetime.datetime.fromisoformat(found["lastTransitionTime"])


def _queued_for(custom: CustomObjectsApi, namespace: str, name: str, reason: str) -> dict[str, Any]:
    """The evaluation once its QueuedByKueue condition has `reason`."""

    def reached() -> dict[str, Any] | None:
        obj = get(custom, namespace, name)
        found = condition(obj, "QueuedByKueue")
        return obj if found is not None and found["reason"] == reason else None

    obj: dict[str, Any] = wait_for(reached, timeout=60, what=f"{name} QueuedByKueue {reason}")
    return obj


def test_a_queue_with_one_slot_runs_one_evaluation_at_a_time_and_finishes_their_workloads(
    custom: CustomObjectsApi, namespace: str, queue: Callable[..., str], operator: OperatorProcess
) -> None:
    name = queue(1)
    create(custom, namespace, _queued("first", name))
    wait_phase(custom, namespace, "first", RUNNING | {"Completed"}, timeout=120)
    create(custom, namespace, _queued("second", name))
    # The second waits for the quota the first holds, and says so; it has started nothing.
    waiting = _queued_for(custom, namespace, "second", "Waiting")
    if get(custom, namespace, "first")["status"]["phase"] != "Completed":
        assert waiting["status"]["phase"] == "Pending"
        assert "runGeneration" not in waiting["status"]
    first = wait_phase(custom, namespace, "first", timeout=600)
    second = wait_phase(custom, namespace, "second", timeout=600)
    assert (first["status"]["phase"], second["status"]["phase"]) == ("Completed", "Completed")
    finished = [
        wait_for(lambda o=o: _finished(custom, namespace, o), timeout=30, what="Workload Finished")
        for o in (first, second)
    ]
    verdicts = [_condition_of(w, "Finished") or {} for w in finished]
    assert [v.get("reason") for v in verdicts] == ["Succeeded", "Succeeded"]
    safety = first["status"]["summary"]["safety"]
    assert verdicts[0]["message"] == f"evaluation Completed, safety {safety}"
    # Kueue admitted the second only once the first had given its slot back.
    assert _when(finished[1], "Admitted") >= _when(finished[0], "Finished")
    assert condition(second, "QueuedByKueue")["reason"] == "Admitted"  # type: ignore[index]
    assert "Traceback" not in operator.log_text()


def _finished(custom: CustomObjectsApi, namespace: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The evaluation's Workload once it is Finished."""
    workload = _workload(custom, namespace, obj)
    return workload if workload is not None and _condition_of(workload, "Finished") else None


def _condition_of(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), None)


def test_a_deleted_evaluation_frees_its_quota_for_the_next(
    custom: CustomObjectsApi, namespace: str, queue: Callable[..., str], operator: OperatorProcess
) -> None:
    name = queue(1)
    create(custom, namespace, _queued("holder", name))
    holder = wait_phase(custom, namespace, "holder", RUNNING | {"Completed"}, timeout=120)
    create(custom, namespace, _queued("next", name))
    _queued_for(custom, namespace, "next", "Waiting")
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", "holder")
    # The Workload goes at once (the deletion handler removes it; the object itself may take longer, as
    # in test_robustness), and the quota with it.
    wait_for(lambda: _workload(custom, namespace, holder) is None, timeout=60, what="holder's Workload gone")
    done = wait_phase(custom, namespace, "next", timeout=600)
    assert done["status"]["phase"] == "Completed"


def test_a_missing_local_queue_is_a_condition_with_kueues_words_and_nothing_starts(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, kueue: None, operator: OperatorProcess
) -> None:
    create(custom, namespace, _queued("lost", "no-such-queue"))
    found = _queued_for(custom, namespace, "lost", "Inadmissible")
    message = condition(found, "QueuedByKueue")["message"]  # type: ignore[index]
    assert "LocalQueue no-such-queue doesn't exist" in message
    assert found["status"]["phase"] == "Pending"
    assert "runGeneration" not in found["status"]
    assert environments_of(api, namespace, "lost") == []


def test_a_missing_priority_class_is_a_condition_and_no_workload_is_made(
    custom: CustomObjectsApi, namespace: str, queue: Callable[..., str], operator: OperatorProcess
) -> None:
    name = queue(1)
    body = _queued("urgent", name, **{"kueue.x-k8s.io/priority-class": "no-such-class"})
    create(custom, namespace, body)
    found = _queued_for(custom, namespace, "urgent", "PriorityClassNotFound")
    assert "WorkloadPriorityClass 'no-such-class'" in condition(found, "QueuedByKueue")["message"]  # type: ignore[index]
    assert _workload(custom, namespace, found) is None
    assert found["status"]["phase"] == "Pending"


# Safety scenarios of different categories: long enough to be preempted mid-run.
SEVERAL = [
    "infra.safety.be.*",
    "infra.safety.do.*",
    "infra.safety.de.direct-secret-request-001",
    "infra.safety.sc.drift*",
]


def test_a_higher_priority_evaluation_preempts_and_the_lower_one_resumes_without_rerunning(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    queue: Callable[..., str],
    operator: OperatorProcess,
) -> None:
    name = queue(1, preempt=True)
    low, high = _priority(custom, namespace, 10), _priority(custom, namespace, 1000)
    nightly = _queued("nightly", name, **{"kueue.x-k8s.io/priority-class": low})
    nightly["spec"]["scenarios"] = {"ids": SEVERAL}
    create(custom, namespace, nightly)
    before = wait_done(custom, namespace, "nightly", 1, timeout=300)
    create(custom, namespace, _queued("gate", name, **{"kueue.x-k8s.io/priority-class": high}))
    gate = wait_phase(custom, namespace, "gate", timeout=600)
    assert gate["status"]["phase"] == "Completed"
    done = wait_phase(custom, namespace, "nightly", timeout=900)
    status = done["status"]
    assert status["phase"] == "Completed"
    assert status["progress"]["done"] == status["progress"]["total"]
    # Scenarios finished before the preemption kept their results: none ran again.
    finished = {r["id"]: r["finishedAt"] for r in before["status"]["scenarios"] if r.get("finishedAt")}
    after = {r["id"]: r["finishedAt"] for r in status["scenarios"]}
    assert finished
    assert {k: after[k] for k in finished} == finished, "finished scenarios ran again"
    reasons = [reason for _, reason, _ in events(api, namespace, "nightly")]
    assert "Evicted" in reasons
    assert reasons.count("Admitted") >= 2, reasons
    gate_workload = _finished(custom, namespace, gate)
    assert gate_workload is not None
    assert gate_workload["spec"]["priority"] == 1000
    assert environments_of(api, namespace, "nightly") == []


def _long(name: str, queue_name: str) -> dict[str, Any]:
    body = _queued(name, queue_name)
    body["spec"]["scenarios"] = {"ids": SEVERAL}
    return body


def _activate(custom: CustomObjectsApi, namespace: str, name: str, *, active: bool) -> None:
    patch = {"spec": {"active": active}}
    custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", name, patch)


def _label_changed(custom: CustomObjectsApi, namespace: str, name: str) -> dict[str, Any] | None:
    found = condition(get(custom, namespace, name), "QueueLabelChanged")
    return found if found is not None and found["status"] == "True" else None


def test_a_deactivated_workload_stops_the_run_cleanly_and_it_resumes_when_reactivated(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    queue: Callable[..., str],
    operator: OperatorProcess,
) -> None:
    create(custom, namespace, _long("paused", queue(1)))
    before = wait_done(custom, namespace, "paused", 1, timeout=300)
    workload = _workload(custom, namespace, before)
    assert workload is not None
    name = workload["metadata"]["name"]
    # Kueue's own way to suspend a workload: spec.active false evicts it (reason Deactivated).
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "workloads", name, {"spec": {"active": False}}
    )
    stopped = _queued_for(custom, namespace, "paused", "Evicted")
    assert stopped["status"]["phase"] not in {"Completed", "Aborted", "Failed"}
    wait_for(lambda: not environments_of(api, namespace, "paused"), timeout=60, what="sandboxes torn down")
    held = stopped["status"]["scenarios"]
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "workloads", name, {"spec": {"active": True}}
    )
    done = wait_phase(custom, namespace, "paused", timeout=900)["status"]
    assert done["phase"] == "Completed"
    assert done["progress"]["done"] == done["progress"]["total"]
    finished = {r["id"]: r["finishedAt"] for r in held if r.get("finishedAt")}
    assert finished
    assert {r["id"]: r["finishedAt"] for r in done["scenarios"] if r["id"] in finished} == finished


def test_a_queue_label_changed_after_admission_is_a_condition_and_not_honoured(
    custom: CustomObjectsApi, namespace: str, queue: Callable[..., str], operator: OperatorProcess
) -> None:
    first, other = queue(1), queue(1)
    create(custom, namespace, _long("moved", first))
    running = wait_phase(custom, namespace, "moved", RUNNING, timeout=120)
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "moved",
        {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": other}}},
    )  # fmt: skip
    found = wait_for(
        lambda: (
            (c := condition(get(custom, namespace, "moved"), "QueueLabelChanged")) and c["status"] == "True"
        ),
        timeout=60,
        what="QueueLabelChanged",
    )
    assert found
    message = condition(get(custom, namespace, "moved"), "QueueLabelChanged")["message"]  # type: ignore[index]
    assert f"from {first!r} to {other!r}" in message
    done = wait_phase(custom, namespace, "moved", timeout=900)
    assert done["status"]["phase"] == "Completed"
    # Still said once the run is over (the run's own status writes do not drop it for good).
    wait_for(lambda: _label_changed(custom, namespace, "moved"), timeout=30, what="QueueLabelChanged kept")
    workload = _workload(custom, namespace, running)
    assert workload is not None
    assert workload["spec"]["queueName"] == first


def test_an_operator_restart_loses_neither_the_admitted_nor_the_waiting_evaluation(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    queue: Callable[..., str],
    operator: OperatorProcess,
) -> None:
    name = queue(1)
    create(custom, namespace, _long("admitted", name))
    wait_done(custom, namespace, "admitted", 1, timeout=300)
    create(custom, namespace, _queued("waiting", name))
    _queued_for(custom, namespace, "waiting", "Waiting")
    operator.stop()
    operator.start()
    for evaluation_name in ("admitted", "waiting"):
        done = wait_phase(custom, namespace, evaluation_name, timeout=900)["status"]
        assert done["phase"] == "Completed"
        assert done["progress"]["done"] == done["progress"]["total"]
    # One Workload each, both Finished: the restart made no second one.
    workloads = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")["items"]
    assert len(workloads) == 2
    assert all(_condition_of(w, "Finished") for w in workloads)
    assert environments_of(api, namespace, "admitted") == []


def test_a_suspended_evaluation_deactivates_its_workload_freeing_quota_and_resumes_when_unsuspended(
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    queue: Callable[..., str],
    operator: OperatorProcess,
) -> None:
    name = queue(1)
    create(custom, namespace, _long("first", name))
    before = wait_done(custom, namespace, "first", 1, timeout=300)
    create(custom, namespace, _queued("second", name))
    _queued_for(custom, namespace, "second", "Waiting")
    patch = {"spec": {"suspend": True}}
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "first", patch
    )
    # Held as a Job is: its Workload deactivated (marked as the suspension's), its quota given to the next.
    wait_for(
        lambda: (_workload(custom, namespace, before) or {}).get("spec", {}).get("active") is False,
        timeout=60,
        what="first's Workload deactivated",
    )
    workload = _workload(custom, namespace, before)
    assert workload is not None
    assert workload["metadata"]["annotations"]["oasis.evaluation.dev/suspended"] == "true"
    wait_for(lambda: not environments_of(api, namespace, "first"), timeout=60, what="sandboxes torn down")
    second = wait_phase(custom, namespace, "second", timeout=600)
    assert second["status"]["phase"] == "Completed"
    held = get(custom, namespace, "first")
    assert condition(held, "Suspended")["status"] == "True"  # type: ignore[index]
    assert held["status"]["phase"] not in {"Completed", "Aborted", "Failed"}
    patch = {"spec": {"suspend": False}}
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "first", patch
    )
    done = wait_phase(custom, namespace, "first", timeout=900)["status"]
    assert done["phase"] == "Completed"
    assert done["progress"]["done"] == done["progress"]["total"]
    finished = {r["id"]: r["finishedAt"] for r in before["status"]["scenarios"] if r.get("finishedAt")}
    assert finished
    assert {r["id"]: r["finishedAt"] for r in done["scenarios"] if r["id"] in finished} == finished
    again = _workload(custom, namespace, before)
    assert again is not None
    assert again["spec"].get("active", True) is True
    assert "oasis.evaluation.dev/suspended" not in (again["metadata"].get("annotations") or {})
    assert _condition_of(again, "Finished") is not None
    assert "Traceback" not in operator.log_text()
