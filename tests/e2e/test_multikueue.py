"""An OASISEvaluation across two local planes with MultiKueue: applied on the manager, run on the worker.

The test plane is the manager: Kueue's manager beside it is a MultiKueue manager (OASISEvaluation in
`multiKueue.externalFrameworks`), joined to a second plane started here under a tmp dir (the worker,
with a Kueue of its own) by `localcluster.multikueue.connect_worker`. Each plane has an operator watching
the test's namespace. The manager's ClusterQueue has the MultiKueue admission check; the worker's has
quota for one scenario slot. The evaluation runs one scenario with the careful reference agent.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.crdgen import build_crds
from oasis_operator.evaluation.kueue_workload import ORIGIN_LABEL, PREBUILT_LABEL, QUEUE_LABEL, workload_name
from oasis_operator.evaluation.multikueue import KEPT_LABEL
from oasis_operator.kube import api_client, apply_crds
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.localcluster.kueue import missing_kueue, start_kueue
from oasis_operator.localcluster.multikueue import connect_worker, disconnect_worker
from oasis_operator.models.crd import MANAGED_BY_MULTIKUEUE, EvaluationRef
from tests.cluster_fixtures import VENV_BIN, Cluster, wait_for
from tests.e2e.support import OperatorProcess, agent_command, create, evaluation, events, get, wait_phase

pytestmark = pytest.mark.skipif(
    missing_kueue() is not None, reason=f"Kueue is not built here: {missing_kueue()}"
)
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
WORKER = "worker1"


@pytest.fixture(scope="module")
def manager_plane(cluster: Cluster, api: ApiClient) -> LocalControlPlane:
    """The test plane with Kueue's manager beside it (stopped with the plane)."""
    plane = cluster.plane or LocalControlPlane(run_dir=cluster.kubeconfig.parent)
    start_kueue(plane)
    return plane


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, manager_plane: LocalControlPlane) -> Iterator[Cluster]:
    """A second plane with Kueue and the CRDs, joined to the manager's Kueue as MultiKueueCluster
    `worker1`; stopped after the module (its processes die with this pytest process too)."""
    plane = LocalControlPlane(run_dir=tmp_path_factory.mktemp("worker-plane"), die_with_parent=True)
    plane.start()
    try:
        start_kueue(plane)
        client = api_client(plane.kubeconfig)
        apply_crds(client, build_crds().values())
        client.close()  # type: ignore[no-untyped-call]
        connect_worker(manager_plane, WORKER, plane.kubeconfig)
        yield Cluster(plane.kubeconfig, plane.audit_log, plane)
    finally:
        disconnect_worker(manager_plane, WORKER)
        plane.stop()


def _cluster_object(
    custom: CustomObjectsApi, plural: str, kind: str, name: str, spec: dict[str, Any]
) -> None:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name}, "spec": spec}
    custom.create_cluster_custom_object(GROUP, VERSION, plural, body)


def _queues(custom: CustomObjectsApi, namespace: str, name: str, check: str | None) -> None:
    """A ResourceFlavor, a ClusterQueue for one slot (with the admission check `check`) and its LocalQueue."""
    _cluster_object(custom, "resourceflavors", "ResourceFlavor", name, {})
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": name,
                        "resources": [
                            {"name": "cpu", "nominalQuota": "1"},
                            {"name": "memory", "nominalQuota": "1Gi"},
                        ],
                    }
                ],
            }
        ],
    }
    if check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": check}]}
    _cluster_object(custom, "clusterqueues", "ClusterQueue", name, spec)
    local = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LocalQueue",
        "metadata": {"name": name},
        "spec": {"clusterQueue": name},
    }
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", local)


@pytest.fixture
def dispatching_queue(
    custom: CustomObjectsApi, namespace: str, worker: Cluster
) -> Iterator[tuple[str, CustomObjectsApi]]:
    """A LocalQueue of the same name in the test's namespace on both planes: the manager's behind the
    MultiKueue admission check, the worker's with quota; (its name, the worker's API)."""
    name = f"mk-{uuid.uuid4().hex[:8]}"
    worker_api = api_client(worker.kubeconfig)
    worker_custom = CustomObjectsApi(worker_api)
    CoreV1Api(worker_api).create_namespace({"metadata": {"name": namespace}})
    _queues(worker_custom, namespace, name, None)
    _cluster_object(custom, "multikueueconfigs", "MultiKueueConfig", name, {"clusters": [WORKER]})
    check = {
        "controllerName": MANAGED_BY_MULTIKUEUE,
        "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": name},
    }
    _cluster_object(custom, "admissionchecks", "AdmissionCheck", name, check)
    _queues(custom, namespace, name, name)
    try:
        yield name, worker_custom
    finally:
        for api_of, plurals in (
            (worker_custom, ("clusterqueues", "resourceflavors")),
            (custom, ("clusterqueues", "resourceflavors", "admissionchecks", "multikueueconfigs")),
        ):
            for plural in plurals:
                try:
                    api_of.delete_cluster_custom_object(GROUP, VERSION, plural, name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        try:
            CoreV1Api(worker_api).delete_namespace(namespace)
        finally:
            worker_api.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def operators(
    cluster: Cluster, worker: Cluster, namespace: str, tmp_path: Path
) -> Iterator[tuple[OperatorProcess, OperatorProcess]]:
    """An operator on each plane, watching the test's namespace; both stopped after the test."""
    (tmp_path / "manager").mkdir()
    (tmp_path / "worker").mkdir()
    manager = OperatorProcess(cluster, namespace, tmp_path / "manager").start()
    on_worker = OperatorProcess(worker, namespace, tmp_path / "worker").start()
    try:
        yield manager, on_worker
    finally:
        on_worker.stop()
        manager.stop()


def _dispatched(name: str, queue: str) -> dict[str, Any]:
    """An evaluation for MultiKueue: the careful agent on one scenario, in `queue`."""
    body = evaluation(name, agent_command("careful"), scenarios=ONE, managedBy=MANAGED_BY_MULTIKUEUE)
    body["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return body


def _report(name: str, namespace: str, cluster: Cluster, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [str(VENV_BIN / "oasis"), "report", "get", name, "-n", namespace, "-o", "json"]
    command += ["--kubeconfig", str(cluster.kubeconfig), *extra]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=dict(os.environ), check=False
    )


def test_an_evaluation_applied_on_the_manager_runs_on_the_worker_and_its_verdict_and_report_reach_the_manager(
    cluster: Cluster,
    worker: Cluster,
    api: ApiClient,
    custom: CustomObjectsApi,
    namespace: str,
    dispatching_queue: tuple[str, CustomObjectsApi],
    operators: tuple[OperatorProcess, OperatorProcess],
) -> None:
    queue, worker_custom = dispatching_queue
    manager_operator, worker_operator = operators
    create(custom, namespace, _dispatched("mk", queue))
    created = get(custom, namespace, "mk")
    manager_workload = workload_name(EvaluationRef.of(created))

    # The worker gets MultiKueue's copy: no managedBy, its prebuilt Workload and origin labelled.
    copy = wait_for(
        lambda: _maybe(worker_custom, namespace, "mk"),
        timeout=180,
        interval=1.0,
        what="the copy on the worker",
    )
    assert "managedBy" not in copy["spec"]
    assert copy["metadata"]["labels"][PREBUILT_LABEL] == manager_workload
    assert copy["metadata"]["labels"].get(ORIGIN_LABEL)

    final = wait_phase(custom, namespace, "mk", timeout=600)
    status = final["status"]
    assert status["phase"] == "Completed", (status, worker_operator.log_text()[-3000:])
    assert status["summary"]["safety"] == "PASS", json.dumps(status, indent=1)[:4000]
    assert [row["id"] for row in status["scenarios"]] == ONE["ids"]
    # The manager's operator ran nothing and added no finalizer; its Workload is Finished.
    assert not final["metadata"].get("finalizers")
    reasons = {reason for _, reason, _ in events(api, namespace, "mk")}
    assert "WorkloadCreated" in reasons, (reasons, manager_operator.log_text()[-3000:])
    assert not reasons & {"Admitted", "Started", "ScenarioStarted"}, reasons
    workload = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", manager_workload)
    finished = {c["type"]: c for c in workload["status"]["conditions"]}["Finished"]
    assert finished["status"] == "True", workload["status"]
    assert workload["status"].get("clusterName") == WORKER

    # Without the worker's kubeconfig the CLI names the worker and the flag.
    refused = _report("mk", namespace, cluster)
    assert refused.returncode != 0
    assert WORKER in refused.stderr, refused.stderr
    assert "--worker-kubeconfig" in refused.stderr, refused.stderr
    # MultiKueue deletes its copy once the manager has the verdict; the documents stay, kept.
    wait_for(
        lambda: _maybe(worker_custom, namespace, "mk") is None,
        timeout=120,
        interval=1.0,
        what="the copy gone",
    )
    worker_api = api_client(worker.kubeconfig)
    try:
        kept = CoreV1Api(worker_api).list_namespaced_config_map(namespace, label_selector=KEPT_LABEL)
    finally:
        worker_api.close()  # type: ignore[no-untyped-call]
    assert {cm.metadata.name for cm in kept.items} >= set(status["reportConfigMaps"])
    fetched = _report("mk", namespace, cluster, "--worker-kubeconfig", str(worker.kubeconfig))
    assert fetched.returncode == 0, fetched.stderr
    report = json.loads(fetched.stdout)["report"]
    assert [r["scenario_id"] for r in report["scenarios"]] == ONE["ids"]
    assert report["verdict"]["safety"] == "PASS", json.dumps(report["verdict"], indent=1)[:3000]


def _maybe(custom: CustomObjectsApi, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = get(custom, namespace, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def test_deleting_the_managers_evaluation_removes_its_workload_and_the_workers_copy(
    custom: CustomObjectsApi,
    namespace: str,
    dispatching_queue: tuple[str, CustomObjectsApi],
    operators: tuple[OperatorProcess, OperatorProcess],
) -> None:
    queue, worker_custom = dispatching_queue
    create(custom, namespace, _dispatched("gone", queue))
    name = workload_name(EvaluationRef.of(get(custom, namespace, "gone")))
    wait_for(
        lambda: _maybe(worker_custom, namespace, "gone"), timeout=180, interval=1.0, what="the worker's copy"
    )
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", "gone")

    def workload_gone() -> bool:
        try:
            custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", name)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(workload_gone, timeout=120, interval=1.0, what="the manager's Workload gone")
    wait_for(
        lambda: _maybe(worker_custom, namespace, "gone") is None, timeout=120, interval=1.0, what="no copy"
    )
    remote = worker_custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")["items"]
    assert not [w["metadata"]["name"] for w in remote if w["metadata"]["name"] == name]
