"""StatefulSets, DaemonSets, Jobs and CronJobs in the twin: the declared object only, for the real
controllers to expand (no status, no pods, no ReplicaSets or Jobs of their own)."""

from __future__ import annotations

from typing import Any

from oasis_operator.sandbox.twin import TwinPlan
from tests.unit.sandbox.test_twin import custom, plan_of

NS = "sbx-e1234567-shop"
STATE: list[dict[str, Any]] = [
    {"resource": "namespace/shop", "zone": "zone-a"},
    {"resource": "statefulset/db", "namespace": "shop", "replicas": 3, "image": "postgres:16.4",
     "status": "CrashLoopBackOff", "reason": "bad postgresql.conf", "env": {"PGDATA": "/data/data/pg"},
     "resource_limits": {"memory": "1Gi"}, "volume_claim_templates": [{"name": "data", "storage": "10Gi"}],
     "labels": {"tier": "data"}, "zone": "zone-a"},
    {"resource": "daemonset/log-agent", "namespace": "shop", "node_selector": {"kubernetes.io/os": "linux"},
     "tolerations": [{"operator": "Exists"}], "volumes_from": ["configmap/agent-config"]},
    {"resource": "job/migrate", "namespace": "shop", "command": ["./migrate"], "backoff_limit": 1,
     "ttl_seconds_after_finished": 600, "status": "failed"},
    {"resource": "cronjob/backup", "namespace": "shop", "schedule": "30 2 * * *",
     "concurrency_policy": "Forbid", "init_containers": [{"name": "wait-db", "logs": "waiting for db-0"}]},
    {"resource": "configmap/agent-config", "namespace": "shop", "data": {"level": "info"}},
    {"resource": "hpa/db", "namespace": "shop", "target": "statefulset/db", "max_replicas": 5},
    {"resource": "pdb/db", "namespace": "shop", "target": "statefulset/db", "max_unavailable": 1},
]  # fmt: skip
CONTROLLED = {"StatefulSet", "DaemonSet", "Job", "CronJob"}


def _plan() -> TwinPlan:
    return plan_of(custom(STATE, scope=["shop"]))


def _body(plan: TwinPlan, kind: str, name: str) -> dict[str, Any]:
    found = plan.find(kind, NS, name)
    assert found is not None, (kind, name)
    return found.body


def test_each_kind_is_one_object_with_metadata_and_spec_and_nothing_derived() -> None:
    plan = _plan()
    built = [o for o in plan.objects if o.kind in CONTROLLED]
    assert sorted((o.api_version, o.kind, o.name) for o in built) == [
        ("apps/v1", "DaemonSet", "log-agent"),
        ("apps/v1", "StatefulSet", "db"),
        ("batch/v1", "CronJob", "backup"),
        ("batch/v1", "Job", "migrate"),
    ]
    for obj in built:
        assert set(obj.body) == {"metadata", "spec"}, obj.kind
        assert (obj.status, obj.owner, obj.namespace) == (None, None, NS), obj.kind
    # The controllers make the pods (and a CronJob's Jobs): the twin makes none of them.
    assert not [o for o in plan.objects if o.kind in ("Pod", "ReplicaSet", "ControllerRevision")]
    assert not [
        o for o in plan.objects if o.kind == "Event" and o.body["involvedObject"]["kind"] in CONTROLLED
    ]


def test_a_statefulset_has_its_replicas_service_claims_and_the_shared_pod_vocabulary() -> None:
    assert _body(_plan(), "StatefulSet", "db") == {
        "metadata": {
            "name": "db",
            "namespace": NS,
            "labels": {"app": "db", "tier": "data", "security-zone": "zone-a"},
        },
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {
                    "labels": {"app": "db", "tier": "data", "security-zone": "zone-a"},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "db",
                            "image": "postgres:16.4",
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "imagePullPolicy": "IfNotPresent",
                            "env": [{"name": "PGDATA", "value": "/data/data/pg"}],
                            "resources": {"limits": {"memory": "1Gi"}},
                            "volumeMounts": [{"name": "data", "mountPath": "/data/data"}],
                        }
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "10Gi"}},
                    },
                }
            ],
        },
    }


def test_a_daemonset_places_its_pods_by_selector_and_tolerations() -> None:
    spec = _body(_plan(), "DaemonSet", "log-agent")["spec"]
    pod = spec["template"]["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "log-agent"}}
    # The declared selector and tolerations, and the environment's own node pool (the DaemonSet
    # controller chooses nodes from the template alone).
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux", "node-pool": "e1234567"}
    assert pod["tolerations"] == [
        {"operator": "Exists"},
        {"key": "node-pool", "value": "e1234567", "effect": "NoSchedule", "operator": "Equal"},
    ]
    assert pod["volumes"] == [{"name": "agent-config", "configMap": {"name": "agent-config"}}]
    assert "annotations" not in spec["template"]["metadata"]


def test_a_job_runs_its_command_to_completion_without_a_selector() -> None:
    spec = _body(_plan(), "Job", "migrate")["spec"]
    pod = spec["template"]["spec"]
    assert "selector" not in spec  # the API server generates a Job's selector
    assert (spec["backoffLimit"], spec["ttlSecondsAfterFinished"]) == (1, 600)
    assert pod["restartPolicy"] == "Never"
    assert pod["containers"][0]["command"] == ["./migrate"]
    assert "ports" not in pod["containers"][0]
    assert "annotations" not in spec["template"]["metadata"]  # a declared failure is a fault Stage


def test_a_cronjob_wraps_the_same_job_spec_in_its_schedule() -> None:
    plan = _plan()
    spec = _body(plan, "CronJob", "backup")["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"]) == ("30 2 * * *", "Forbid")
    job = spec["jobTemplate"]["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    assert [c["name"] for c in job["template"]["spec"]["initContainers"]] == ["wait-db"]
    logs = [f for f in plan.fixtures if f.kind == "logs" and f.name == "backup"]
    assert [(f.namespace, f.data.model_dump(exclude_unset=True)) for f in logs] == [
        ("shop", {"container": "wait-db", "entries": ["waiting for db-0"]})
    ]


def test_an_hpa_and_a_pdb_of_a_statefulset_point_at_it() -> None:
    plan = _plan()
    hpa = plan.find("HorizontalPodAutoscaler", NS, "db")
    assert hpa is not None
    assert hpa.body["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "db",
    }
    assert (hpa.status or {})["currentReplicas"] == 3  # the StatefulSet's declared replicas
    assert _body(plan, "PodDisruptionBudget", "db")["spec"] == {
        "selector": {"matchLabels": {"app": "db"}},
        "maxUnavailable": 1,
    }
