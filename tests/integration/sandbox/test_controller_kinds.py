"""The twin's StatefulSets, DaemonSets, Jobs, CronJobs, and the HPAs and PDBs of them, on a real API server.

Each body goes through the server's own validation and defaulting with a server-side dry run (nothing is
stored); a body the server would refuse fails here rather than when a sandbox is provisioned. Then one
sandbox declaring them all is provisioned: the objects exist as declared, are in the before-snapshot (which
reading the sandbox again reproduces), and the agent's Role lets it act on them as on Deployments.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.sandbox.twin import TwinObject
from tests.cluster_fixtures import Cluster
from tests.unit.models.test_declared_workloads import CRON_SCHEDULES
from tests.unit.sandbox.test_twin import custom, plan_of
from tests.unit.sandbox.test_twin_controllers import STATE

KINDS = ("StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler", "PodDisruptionBudget")


def _twin_objects(kind: str) -> list[TwinObject]:
    found = [o for o in plan_of(custom(STATE, scope=["shop"])).objects if o.kind == kind]
    assert found, kind
    return found


def _dry_run_create(api: ApiClient, namespace: str, obj: TwinObject) -> dict[str, Any]:
    body = {"apiVersion": obj.api_version, "kind": obj.kind, **copy.deepcopy(obj.body)}
    body["metadata"]["namespace"] = namespace
    path = resource_path(obj.kind, namespace, api_version=obj.api_version)
    answer: dict[str, Any] = request(api, "POST", path, body, query={"dryRun": "All"})
    return answer


@pytest.mark.parametrize("kind", KINDS)
def test_the_api_server_accepts_the_twins_body(api: ApiClient, namespace: str, kind: str) -> None:
    for obj in _twin_objects(kind):
        answer = _dry_run_create(api, namespace, obj)
        assert (answer["kind"], answer["metadata"]["name"]) == (kind, obj.name)
        # What the twin wrote comes back (the server only adds its defaults, in nested objects too).
        for key, value in obj.body["spec"].items():
            if not isinstance(value, dict | list):
                assert answer["spec"][key] == value, (kind, key)
        with pytest.raises(ApiException) as absent:  # a dry run stores nothing
            request(api, "GET", resource_path(kind, namespace, obj.name, api_version=obj.api_version))
        assert absent.value.status == 404


def test_the_dry_run_refuses_what_the_server_would_refuse(api: ApiClient, namespace: str) -> None:
    # The check above can fail: a Job whose pods restart Always is not a Job the server takes.
    job = copy.deepcopy(_twin_objects("Job")[0])
    job.body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ApiException) as refused:
        _dry_run_create(api, namespace, job)
    assert refused.value.status == 422
    assert "spec.template.spec.restartPolicy" in str(refused.value.body)


@pytest.mark.parametrize(("schedule", "problem"), CRON_SCHEDULES)
def test_the_models_read_a_cron_schedule_as_the_api_server_does(
    api: ApiClient, namespace: str, schedule: str, problem: str | None
) -> None:
    cronjob = copy.deepcopy(_twin_objects("CronJob")[0])
    cronjob.body["spec"]["schedule"] = schedule
    if problem is None:
        assert _dry_run_create(api, namespace, cronjob)["spec"]["schedule"] == schedule
        return
    with pytest.raises(ApiException) as refused:
        _dry_run_create(api, namespace, cronjob)
    assert refused.value.status == 422
    assert "spec.schedule" in str(refused.value.body)


@pytest.mark.parametrize(
    ("kind", "field", "value", "blamed"),
    [
        # Scaling to zero needs an Object or External metric: the server names the metrics.
        ("HorizontalPodAutoscaler", "minReplicas", 0, "spec.metrics"),
        ("PodDisruptionBudget", "maxUnavailable", "50", "spec.maxUnavailable"),
        ("PodDisruptionBudget", "maxUnavailable", "150%", "spec.maxUnavailable"),
        ("PodDisruptionBudget", "maxUnavailable", -1, "spec.maxUnavailable"),
    ],
)
def test_a_value_the_models_refuse_the_api_server_refuses_too(
    api: ApiClient, namespace: str, kind: str, field: str, value: object, blamed: str
) -> None:
    # The models' limits (`min_replicas` at least 1, a PDB's count or percentage) are the server's.
    obj = copy.deepcopy(_twin_objects(kind)[0])
    obj.body["spec"][field] = value
    with pytest.raises(ApiException) as refused:
        _dry_run_create(api, namespace, obj)
    assert refused.value.status == 422
    assert blamed in str(refused.value.body)


def test_a_sandbox_declaring_them_holds_snapshots_and_lets_the_agent_act_on_them(
    cluster: Cluster, api: ApiClient
) -> None:
    provider = SandboxProvider(api, prefix="k")
    record = provider.provision(custom(STATE, scope=["shop"]), evaluation="tests/controller-kinds")
    try:
        shop = record.environment.sandbox_namespace("shop")
        assert shop is not None
        declared = {(s.kind, s.name) for s in record.before if s.exists and s.namespace == "shop"}
        assert {
            ("StatefulSet", "db"),
            ("DaemonSet", "log-agent"),
            ("Job", "migrate"),
            ("CronJob", "backup"),
            ("HorizontalPodAutoscaler", "db"),
            ("PodDisruptionBudget", "db"),
        } <= declared
        # Read back, the sandbox is its before-snapshot (taken from provisioning's own write answers);
        # the Job listing of the derived kinds finds only the declared Job, which is not derived.
        assert provider.snapshot(record.environment, record.resources) == record.before
        assert [s.name for s in record.before if s.kind == "Job"] == ["migrate"]
        live = request(api, "GET", resource_path("StatefulSet", shop, "db"))
        assert live["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"] == {"storage": "10Gi"}
        who = record.environment.agent.username
        for verb, resource in [
            ("patch", "statefulsets"),
            ("update", "statefulsets/scale"),
            ("delete", "daemonsets"),
            ("create", "jobs"),
            ("patch", "cronjobs"),
            ("list", "controllerrevisions"),
        ]:
            answer = cluster.kubectl("auth", "can-i", verb, resource, "-n", shop, "--as", who, check=False)
            assert answer.stdout.strip() == "yes", (verb, resource)
        answer = cluster.kubectl(
            "auth", "can-i", "create", "controllerrevisions", "-n", shop, "--as", who, check=False
        )
        assert answer.stdout.strip() == "no"
    finally:
        provider.teardown(record.environment.id, wait=False)
