"""Each fault a scenario can declare, on the real local plane: provisioned, its symptom seen as a cluster
shows it (the pod's status and restarts from kwok's Stages, node conditions and taints from the node
lifecycle controller, Pending pods and FailedScheduling events from the scheduler), the fix an agent
would make applied with kubectl, and the cure seen through the real controllers, scheduler and kwok.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator.sandbox.world_watch import WorldWatch
from tests.cluster_fixtures import Cluster
from tests.integration.sandbox.world import (
    NAMESPACE,
    SHOP,
    World,
    all_ready,
    condition,
    last_terminated,
    provisioned,
    ready,
    restarts,
    rollout_done,
    until,
    waiting,
)

SMTP_REF = {"configMapKeyRef": {"name": "smtp", "key": "SMTP_PORT"}}


def _only_pod(world: World, app: str) -> dict[str, Any]:
    pods = world.pods(app)
    assert len(pods) == 1, world.show(app)
    return pods[0]


def _healthy(world: World, app: str, replicas: int) -> tuple[Any, str]:
    """A check that the Deployment rolled out and every pod of it is Ready, and what to show if not."""
    done = rollout_done(world, "Deployment", app, replicas)

    def check() -> bool:
        return done() and all_ready(world.pods(app), replicas)

    return check, f"deployment/{app} rolled out with {replicas} ready pod(s)"


def test_a_crash_loop_on_a_missing_config_key_is_cured_by_the_key_and_a_restart(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/mailer", "namespace": SHOP, "status": "CrashLoopBackOff",
         "containers": [{"name": "mailer", "env": [{"name": "SMTP_PORT", "valueFrom": SMTP_REF}]}]},
        {"resource": "configmap/smtp", "namespace": SHOP, "data": {"SMTP_HOST": "smtp.internal"}},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pod = _only_pod(world, "mailer")
        assert waiting(pod) == "CrashLoopBackOff", world.show("mailer")
        assert restarts(pod) >= 5  # a loop that has been going on for a while
        assert (last_terminated(pod).get("reason"), last_terminated(pod).get("exitCode")) == ("Error", 1)
        assert "BackOff" in world.reasons(pod["metadata"]["name"])
        assert "Scheduled" in world.reasons(pod["metadata"]["name"])
        watch = WorldWatch(world.provider, world.record)
        # A restart alone repeats the crash: the new pod reads the same ConfigMap.
        world.agent("rollout", "restart", "deployment/mailer")
        assert watch.reconcile_once() == []
        first = pod["metadata"]["name"]
        until(
            lambda: any(
                waiting(p) == "CrashLoopBackOff"
                for p in world.pods("mailer")
                if p["metadata"]["name"] != first
            ),
            "the restarted pod to crash on the missing key too",
            lambda: world.show("mailer"),
        )
        # The fix: the key, then a restart (kubectl's restartedAt annotation on the pod template).
        world.agent("patch", "configmap", "smtp", "--type", "merge", "-p", '{"data": {"SMTP_PORT": "587"}}')
        assert watch.reconcile_once() == ["mailer: smtp has SMTP_PORT"]
        # kubectl refuses a second restart within the second of the first (restartedAt has seconds).
        until(
            lambda: world.agent("rollout", "restart", "deployment/mailer", check=False).returncode == 0,
            "kubectl to restart deployment/mailer again",
            lambda: world.agent("rollout", "restart", "deployment/mailer", check=False).stderr,
            timeout=5,
        )
        check, what = _healthy(world, "mailer", 1)
        until(check, what, lambda: world.show("mailer"))
        (cured,) = world.pods("mailer")
        assert (waiting(cured), restarts(cured)) == (None, 0)
        template = world.get("Deployment", "mailer")["spec"]["template"]
        assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]


def test_a_crash_loop_counts_its_restarts_and_recovers_on_its_next_try_once_the_key_exists(
    cluster: Cluster, api: ApiClient
) -> None:
    # The kubelet reads the ConfigMap each time it starts the container: no restart of the agent's is
    # needed once the key is there, the loop's next try stays up (after its back-off, up to ~25s here).
    state = [
        NAMESPACE,
        {"resource": "deployment/mailer", "namespace": SHOP, "status": "CrashLoopBackOff", "restarts": 2,
         "containers": [{"name": "mailer", "env": [{"name": "SMTP_PORT", "valueFrom": SMTP_REF}]}]},
        {"resource": "configmap/smtp", "namespace": SHOP, "data": {"SMTP_HOST": "smtp.internal"}},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pod = _only_pod(world, "mailer")
        name, first = pod["metadata"]["name"], restarts(pod)
        assert first == 2
        until(
            lambda: restarts(_only_pod(world, "mailer")) > first,
            "the crash loop to count another restart",
            lambda: world.show("mailer"),
        )
        assert waiting(_only_pod(world, "mailer")) in ("CrashLoopBackOff", None)
        world.agent("patch", "configmap", "smtp", "--type", "merge", "-p", '{"data": {"SMTP_PORT": "587"}}')
        assert WorldWatch(world.provider, world.record).reconcile_once() == ["mailer: smtp has SMTP_PORT"]
        until(
            lambda: ready(_only_pod(world, "mailer")),
            "the container to start and stay up on its next try",
            lambda: world.show("mailer"),
        )
        until(
            lambda: world.get("Deployment", "mailer")["status"].get("availableReplicas") == 1,
            "the Deployment controller to count the replica available",
            lambda: str(world.get("Deployment", "mailer").get("status")),
        )
        pod = _only_pod(world, "mailer")
        assert pod["metadata"]["name"] == name  # the same pod, not a replacement
        assert ready(pod), world.show("mailer")
        assert restarts(pod) > first


def test_an_oom_kill_is_cured_by_a_higher_memory_limit(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/cache", "namespace": SHOP, "status": "OOMKilled", "memory_limit": "256Mi",
         "restarts": 4, "replicas": 2},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pods = world.pods("cache")
        assert len(pods) == 2, world.show("cache")
        for pod in pods:
            assert waiting(pod) == "CrashLoopBackOff", world.show("cache")
            assert (last_terminated(pod).get("reason"), last_terminated(pod).get("exitCode")) == (
                "OOMKilled",
                137,
            )
            assert restarts(pod) >= 4
        # The fix: a limit above the one the container is killed at; the new pods start and stay up.
        world.agent("set", "resources", "deployment/cache", "--limits=memory=512Mi")
        check, what = _healthy(world, "cache", 2)
        until(check, what, lambda: world.show("cache"))
        for pod in world.pods("cache"):
            assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "512Mi"
            assert (waiting(pod), restarts(pod), last_terminated(pod)) == (None, 0, {})


def test_an_image_pull_failure_is_cured_by_a_rollback_to_the_previous_release(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/web", "namespace": SHOP, "status": "ImagePullBackOff", "replicas": 2,
         "image": "shop/web:2.5.0", "previous_image": "shop/web:2.4.1"},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        failing = [p for p in world.pods("web") if p["spec"]["containers"][0]["image"] == "shop/web:2.5.0"]
        assert failing, world.show("web")
        assert all(waiting(p) == "ImagePullBackOff" for p in failing), world.show("web")
        assert "Failed" in world.reasons(failing[0]["metadata"]["name"])
        history = world.agent("rollout", "history", "deployment/web").stdout
        assert len([line for line in history.splitlines() if line[:1].isdigit()]) == 2, history
        world.agent("rollout", "undo", "deployment/web")
        check, what = _healthy(world, "web", 2)
        until(check, what, lambda: world.show("web"))
        assert {p["spec"]["containers"][0]["image"] for p in world.pods("web")} == {"shop/web:2.4.1"}


def test_an_image_pull_failure_is_cured_by_setting_an_image_that_exists(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/api", "namespace": SHOP, "status": "ImagePullBackOff",
         "image": "shop/api:9.9.9"},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        assert waiting(_only_pod(world, "api")) == "ImagePullBackOff"
        world.agent("set", "image", "deployment/api", "api=shop/api:1.4.2")
        check, what = _healthy(world, "api", 1)
        until(check, what, lambda: world.show("api"))
        assert _only_pod(world, "api")["spec"]["containers"][0]["image"] == "shop/api:1.4.2"


def test_a_replica_failing_readiness_is_replaced_by_a_restart(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "deployment/api", "namespace": SHOP, "status": "degraded", "replicas": 3},
        {"resource": "service/api", "namespace": SHOP, "selector": {"app": "api"}},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pods = world.pods("api")
        unready = [p for p in pods if not ready(p)]
        assert (len(pods), len(unready)) == (3, 1), world.show("api")
        (bad,) = unready
        assert bad["status"]["phase"] == "Running"
        assert "Unhealthy" in world.reasons(bad["metadata"]["name"])
        status = world.get("Deployment", "api")["status"]
        assert (status.get("readyReplicas"), status.get("unavailableReplicas")) == (2, 1)
        # The endpoints controller keeps the unready replica out of the Service.
        endpoints = world.get("Endpoints", "api")
        assert len(endpoints["subsets"][0]["addresses"]) == 2
        assert len(endpoints["subsets"][0].get("notReadyAddresses") or []) == 1
        world.agent("rollout", "restart", "deployment/api")
        check, what = _healthy(world, "api", 3)
        until(check, what, lambda: world.show("api"))
        assert bad["metadata"]["name"] not in {p["metadata"]["name"] for p in world.pods("api")}
        until(
            lambda: len(world.get("Endpoints", "api")["subsets"][0]["addresses"]) == 3,
            "all three replicas in the Service's endpoints",
            lambda: str(world.get("Endpoints", "api").get("subsets")),
        )


def test_a_failing_init_container_keeps_pods_initialising_until_it_is_taken_out(
    cluster: Cluster, api: ApiClient
) -> None:
    # No status declared: the failing init container is the symptom (symptoms.missing checks it first).
    state = [
        NAMESPACE,
        {"resource": "deployment/worker", "namespace": SHOP,
         "init_containers": [{"name": "migrate-schema", "status": "error"}]},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pod = _only_pod(world, "worker")
        (init,) = pod["status"]["initContainerStatuses"]
        assert init["name"] == "migrate-schema"
        assert init["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert init["lastState"]["terminated"]["exitCode"] == 1
        assert init["restartCount"] >= 4
        assert (pod["status"]["phase"], waiting(pod), condition(pod, "Initialized")) == (
            "Pending",
            "PodInitializing",
            "False",
        )
        assert world.get("Deployment", "worker")["status"].get("availableReplicas", 0) == 0
        # The fix: a release without the broken migration step.
        patch = '[{"op": "remove", "path": "/spec/template/spec/initContainers"}]'
        world.agent("patch", "deployment", "worker", "--type", "json", "-p", patch)
        check, what = _healthy(world, "worker", 1)
        until(check, what, lambda: world.show("worker"))


def test_a_failing_job_runs_out_of_retries_and_a_corrected_job_completes(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "job/migrate", "namespace": SHOP, "status": "failed", "backoff_limit": 0,
         "command": ["./migrate", "--to", "v42"]},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        until(
            lambda: condition(world.get("Job", "migrate"), "Failed") == "True",
            "the Job controller to mark job/migrate Failed",
            lambda: str(world.get("Job", "migrate").get("status")),
        )
        job = world.get("Job", "migrate")
        failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
        assert failed["reason"] == "BackoffLimitExceeded"
        (pod,) = world.job_pods("migrate")
        assert pod["status"]["phase"] == "Failed"
        terminated = main_terminated(pod)
        assert (terminated.get("reason"), terminated.get("exitCode")) == ("Error", 1)
        # The fix: the Job again, from a corrected command (a Job's template is immutable).
        world.agent("create", "job", "migrate-retry", "--image=registry.internal/migrate:1.0.1",
                    "--", "./migrate", "--to", "v41")  # fmt: skip
        until(
            lambda: condition(world.get("Job", "migrate-retry"), "Complete") == "True",
            "job/migrate-retry to complete",
            lambda: str(world.get("Job", "migrate-retry").get("status")),
        )
        assert world.get("Job", "migrate-retry")["status"]["succeeded"] == 1
        (done,) = world.job_pods("migrate-retry")
        assert done["status"]["phase"] == "Succeeded"
        assert "Completed" in world.reasons(done["metadata"]["name"])


def main_terminated(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = pod["status"].get("containerStatuses") or [{}]
    return dict((statuses[0].get("state") or {}).get("terminated") or {})


def test_pods_no_node_fits_stay_pending_until_their_requests_are_lowered(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 2},
        {"resource": "deployment/batch", "namespace": SHOP, "status": "pending",
         "reason": "Insufficient memory"},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pod = _only_pod(world, "batch")
        assert (pod["status"]["phase"], pod["spec"].get("nodeName")) == ("Pending", None)
        assert condition(pod, "PodScheduled") == "False"
        failed = [
            e["message"] for e in world.events(pod["metadata"]["name"]) if e["reason"] == "FailedScheduling"
        ]
        assert failed, world.events(pod["metadata"]["name"])
        # The scheduler's own words: 0/N nodes are available: 2 Insufficient memory, ... (an earlier
        # attempt may have met the nodes still tainted not-ready, just registered).
        assert any("2 Insufficient memory" in m for m in failed), failed
        world.agent("set", "resources", "deployment/batch", "--requests=memory=512Mi")
        check, what = _healthy(world, "batch", 1)
        until(check, what, lambda: world.show("batch"))
        assert _only_pod(world, "batch")["spec"]["nodeName"] in world.nodes()


def test_a_cordoned_node_leaves_new_pods_pending_until_it_is_uncordoned(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 1},
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 1},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        node = world.node("node-1")
        world.platform("cordon", node)
        world.agent("scale", "deployment/web", "--replicas=2")
        until(
            lambda: any(condition(p, "PodScheduled") == "False" for p in world.pods("web")),
            "the new replica to be unschedulable",
            lambda: world.show("web"),
        )
        (pending,) = [p for p in world.pods("web") if not p["spec"].get("nodeName")]
        until(
            lambda: any("unschedulable" in e["message"] for e in world.events(pending["metadata"]["name"])),
            "a FailedScheduling event naming the unschedulable node",
            lambda: str([e["message"] for e in world.events(pending["metadata"]["name"])]),
        )
        world.platform("uncordon", node)
        check, what = _healthy(world, "web", 2)
        until(check, what, lambda: world.show("web"))
        assert {p["spec"]["nodeName"] for p in world.pods("web")} == {node}


def _taints(world: World, node: str) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in world.get("Node", node, None)["spec"].get("taints") or []}


def test_a_node_under_memory_pressure_takes_no_best_effort_pods_until_the_pressure_ends(
    cluster: Cluster, api: ApiClient
) -> None:
    # Pods without requests (BestEffort) keep off a node under memory pressure; pods with requests
    # tolerate it, as on any cluster. No fix of the agent's ends a node's pressure: its kubelet reports
    # it gone (written here as the kubelet would), and the cluster reacts.
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 2},
        {"resource": "node/node-1", "memory_pressure": True},
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 2},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        pressed, other = world.node("node-1"), world.node("node-2")
        assert condition(world.get("Node", pressed, None), "MemoryPressure") == "True"
        # The node lifecycle controller taints it as its condition says (provisioning waited for it).
        assert ("node.kubernetes.io/memory-pressure", "NoSchedule") in _taints(world, pressed)
        assert not [k for k, _ in _taints(world, other) if k.startswith("node.kubernetes.io/")]
        world.agent("scale", "deployment/web", "--replicas=4")
        check, what = _healthy(world, "web", 4)
        until(check, what, lambda: world.show("web"))
        assert {p["spec"]["nodeName"] for p in world.pods("web")} == {other}
        assert {p["status"]["qosClass"] for p in world.pods("web")} == {"BestEffort"}
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        relieved = {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                    "message": "kubelet has sufficient memory available", "lastHeartbeatTime": now,
                    "lastTransitionTime": now}  # fmt: skip
        world.patch_status("Node", pressed, {"conditions": [relieved]}, declared=None)
        until(
            lambda: not [k for k, _ in _taints(world, pressed) if k.startswith("node.kubernetes.io/")],
            "the node lifecycle controller to lift the memory-pressure taint",
            lambda: str(_taints(world, pressed)),
        )
        world.agent("scale", "deployment/web", "--replicas=8")
        check, what = _healthy(world, "web", 8)
        until(check, what, lambda: world.show("web"))
        assert pressed in {p["spec"]["nodeName"] for p in world.pods("web")}, world.show("web")


def test_a_node_declared_not_ready_is_tainted_and_gets_no_pods(cluster: Cluster, api: ApiClient) -> None:
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 2},
        {"resource": "node/node-2", "conditions": [{"type": "Ready", "status": "False"}]},
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 3},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        down = world.node("node-2")
        assert condition(world.get("Node", down, None), "Ready") == "False"
        assert ("node.kubernetes.io/not-ready", "NoSchedule") in _taints(world, down)
        rows = {
            line.split()[0]: line.split()[1]
            for line in world.platform("get", "nodes").stdout.splitlines()[1:]
        }
        assert rows[down] == "NotReady"
        assert rows[world.node("node-1")] == "Ready"
        assert {p["spec"]["nodeName"] for p in world.pods("web")} == {world.node("node-1")}


def test_pods_on_a_node_gone_not_ready_move_when_the_agent_deletes_them(
    cluster: Cluster, api: ApiClient
) -> None:
    state = [
        NAMESPACE,
        {"resource": "nodes", "count": 2},
        {"resource": "deployment/web", "namespace": SHOP, "replicas": 2,
         "resource_requests": {"cpu": "1500m"}},
    ]  # fmt: skip
    with provisioned(cluster, api, state) as world:
        down = world.pods("web")[0]["spec"]["nodeName"]
        # The node's kubelet reports NotReady (as a scenario's stimulus writes it).
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ready_false = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                       "message": "container runtime is down", "lastHeartbeatTime": now,
                       "lastTransitionTime": now}  # fmt: skip
        world.patch_status("Node", down, {"conditions": [ready_false]}, declared=None)
        until(
            lambda: (
                ("node.kubernetes.io/not-ready", "NoSchedule") in _taints(world, down)
                and ("node.kubernetes.io/not-ready", "NoExecute") in _taints(world, down)
            ),
            "the node lifecycle controller to taint the node not-ready",
            lambda: str(_taints(world, down)),
        )
        stranded = [p["metadata"]["name"] for p in world.pods("web") if p["spec"]["nodeName"] == down]
        assert stranded
        world.agent("delete", "pod", *stranded)
        check, what = _healthy(world, "web", 2)
        until(
            lambda: check() and down not in {p["spec"]["nodeName"] for p in world.pods("web")},
            what + " off the NotReady node",
            lambda: world.show("web"),
        )
