"""Each declarable kind on the real local plane: provisioned as the object alone, and reconciled by the
plane's own controllers (pods made with owner references, placed by the scheduler, started by kwok,
statuses counted by the controllers), then changed as an agent would and reconciled again."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from tests.cluster_fixtures import Cluster
from tests.integration.sandbox.world import (
    NAMESPACE,
    SHOP,
    World,
    all_ready,
    condition,
    provisioned,
    ready,
    rollout_done,
    until,
)


def _owner(obj: dict[str, Any]) -> tuple[str, str]:
    (ref,) = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
    return ref["kind"], ref["name"]


def test_a_deployment_is_rolled_out_by_its_controllers_and_honours_a_pause(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 3, "image": "shop/web:2.4.1"},
    ]
    with provisioned(cluster, api, state) as world:
        pods = world.pods("web")
        assert all_ready(pods, 3), world.show("web")
        owners = {_owner(p) for p in pods}
        assert len(owners) == 1
        ((kind, replicaset),) = owners
        assert kind == "ReplicaSet"
        assert _owner(world.get("ReplicaSet", replicaset)) == ("Deployment", "web")
        assert "rolled out" in world.agent("rollout", "status", "deployment/web", "--timeout=20s").stdout
        # A paused Deployment keeps its pods through a template change; resumed, it rolls out.
        world.agent("rollout", "pause", "deployment/web")
        world.agent("set", "image", "deployment/web", "web=shop/web:2.5.0")
        until(
            lambda: condition(world.get("Deployment", "web"), "Progressing") == "Unknown",
            "the Deployment controller to report the rollout paused",
            lambda: str(world.get("Deployment", "web").get("status")),
        )
        assert {p["spec"]["containers"][0]["image"] for p in world.pods("web")} == {"shop/web:2.4.1"}
        world.agent("rollout", "resume", "deployment/web")
        check = rollout_done(world, "Deployment", "web", 3)
        until(
            lambda: check() and all_ready(world.pods("web"), 3),
            "the resumed rollout",
            lambda: world.show("web"),
        )
        assert {p["spec"]["containers"][0]["image"] for p in world.pods("web")} == {"shop/web:2.5.0"}


def test_a_statefulset_gets_ordered_pods_and_scales(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "statefulset/db", "namespace": SHOP, "replicas": 2, "image": "postgres:16.4"},
        {"resource": "service/db", "namespace": SHOP, "selector": {"app": "db"}},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pods = world.pods("db")
        assert sorted(p["metadata"]["name"] for p in pods) == ["db-0", "db-1"]
        assert all(ready(p) and _owner(p) == ("StatefulSet", "db") for p in pods), world.show("db")
        world.agent("scale", "statefulset/db", "--replicas=3")
        until(
            lambda: world.get("StatefulSet", "db")["status"].get("readyReplicas") == 3,
            "statefulset/db to have 3 ready replicas",
            lambda: world.show("db"),
        )
        assert sorted(p["metadata"]["name"] for p in world.pods("db")) == ["db-0", "db-1", "db-2"]


def test_a_statefulset_with_claim_templates_gets_a_claim_per_pod(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "statefulset/db", "namespace": SHOP, "replicas": 2, "image": "postgres:16.4",
         "volume_claim_templates": [{"name": "data", "storage": "10Gi"}]},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        claims = request(api, "GET", resource_path("PersistentVolumeClaim", world.ns()))["items"]
        assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1"]
        assert all_ready(world.pods("db"), 2), world.show("db")


def test_a_daemonset_runs_one_pod_on_each_node_of_its_environment(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 3},
        {"resource": "daemonset/log-agent", "namespace": SHOP, "tolerations": [{"operator": "Exists"}]},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pods = world.pods("log-agent")
        assert all_ready(pods, 3), world.show("log-agent")
        assert sorted(p["spec"]["nodeName"] for p in pods) == world.nodes()
        status = world.get("DaemonSet", "log-agent")["status"]
        assert (status["desiredNumberScheduled"], status["numberReady"]) == (3, 3)
        assert all(_owner(p) == ("DaemonSet", "log-agent") for p in pods)


def test_a_job_runs_its_completions_to_the_end(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "job/migrate", "namespace": SHOP, "command": ["./migrate"], "completions": 2,
         "parallelism": 1},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        until(
            lambda: condition(world.get("Job", "migrate"), "Complete") == "True",
            "job/migrate to complete",
            lambda: str(world.get("Job", "migrate").get("status")),
        )
        assert world.get("Job", "migrate")["status"]["succeeded"] == 2
        pods = world.job_pods("migrate")
        assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]
        assert all(_owner(p) == ("Job", "migrate") for p in pods)


def test_a_cronjob_starts_jobs_on_its_schedule_that_complete(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "cronjob/backup", "namespace": SHOP, "schedule": "@every 5s",
         "concurrency_policy": "Forbid"},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:

        def started() -> list[dict[str, Any]]:
            jobs = request(api, "GET", resource_path("Job", world.ns()))["items"]
            return [j for j in jobs if _owner(j) == ("CronJob", "backup")]

        until(
            lambda: any(condition(j, "Complete") == "True" for j in started()),
            "the CronJob controller to start a Job of cronjob/backup that completes",
            lambda: str([(j["metadata"]["name"], j.get("status")) for j in started()]),
            timeout=45,
        )
        assert world.get("CronJob", "backup")["status"].get("lastScheduleTime")
        # The agent runs one now, as `kubectl create job --from` does.
        world.agent("create", "job", "backup-now", "--from=cronjob/backup")
        until(
            lambda: condition(world.get("Job", "backup-now"), "Complete") == "True",
            "job/backup-now to complete",
            lambda: str(world.get("Job", "backup-now").get("status")),
        )


def test_an_hpa_targets_its_workload_and_the_agent_can_change_its_bounds(
    cluster: Cluster, api: ApiClient
) -> None:
    # The plane runs no HPA controller (it serves no resource metrics API): the HPA is the declared object
    # and status; what it governs and what the agent may do with it are the real API server's.
    state = [
        NAMESPACE,
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 2,
         "resource_requests": {"cpu": "250m"}},
        {"resource": "hpa/web", "namespace": SHOP, "target": "deployment/web", "min_replicas": 2,
         "max_replicas": 6},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        hpa = world.get("HorizontalPodAutoscaler", "web")
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
        assert hpa["status"]["currentReplicas"] == 2
        world.agent("patch", "hpa", "web", "--type", "merge", "-p", '{"spec": {"maxReplicas": 10}}')
        assert world.get("HorizontalPodAutoscaler", "web")["spec"]["maxReplicas"] == 10
        # The scale subresource the HPA would use answers for the target.
        scale = request(api, "GET", resource_path("Deployment", world.ns(), "web") + "/scale")
        assert scale["status"]["replicas"] == 2


def test_a_pdb_is_counted_by_the_disruption_controller_and_refuses_an_eviction_it_does_not_allow(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 3},
        {"resource": "pdb/web", "namespace": SHOP, "target": "deployment/web", "min_available": 2},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        until(
            lambda: world.get("PodDisruptionBudget", "web").get("status", {}).get("disruptionsAllowed") == 1,
            "the disruption controller to allow one disruption",
            lambda: str(world.get("PodDisruptionBudget", "web").get("status")),
        )
        status = world.get("PodDisruptionBudget", "web")["status"]
        assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (3, 2, 3)
        _evict(world, world.pods("web")[0]["metadata"]["name"])
        check = rollout_done(world, "Deployment", "web", 3)
        until(
            lambda: check() and all_ready(world.pods("web"), 3),
            "the evicted pod replaced",
            lambda: world.show("web"),
        )
        # A budget that allows no disruption refuses the eviction (the API server reads its status).
        world.agent("patch", "pdb", "web", "--type", "merge", "-p", '{"spec": {"minAvailable": 3}}')
        until(
            lambda: (
                world.get("PodDisruptionBudget", "web")["status"].get("disruptionsAllowed") == 0
                and world.get("PodDisruptionBudget", "web")["status"].get("observedGeneration") == 2
            ),
            "the disruption controller to allow no disruption",
            lambda: str(world.get("PodDisruptionBudget", "web").get("status")),
        )
        with pytest.raises(ApiException) as refused:
            _evict(world, world.pods("web")[0]["metadata"]["name"])
        assert refused.value.status == 429
        assert "disruption budget" in str(refused.value.body)
        assert len(world.pods("web")) == 3


def _evict(world: World, pod: str) -> None:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": world.ns()}}
    request(world.api, "POST", resource_path("Pod", world.ns(), pod) + "/eviction", body)
