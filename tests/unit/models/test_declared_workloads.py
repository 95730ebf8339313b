"""StatefulSet, DaemonSet, Job and CronJob entries: what they accept, and each mistake's exact words."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.models.declared_parse import StateProblem, parse_entry, state_problems
from oasis_operator.models.declared_state import KINDS, DeploymentState
from oasis_operator.models.declared_workloads import (
    CronJobState,
    DaemonSetState,
    JobState,
    PodTemplateState,
    StatefulSetState,
    cron_problem,
)
from oasis_operator.models.mutation import scenario_zones
from oasis_operator.models.scenario import Scenario, StateEntry

DATA = Path(__file__).resolve().parents[2] / "data"
STATE = "preconditions.environment.state"


@cache
def _spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())["spec"]
    return spec


def problems(*entries: dict[str, Any]) -> list[tuple[str, str]]:
    spec = copy.deepcopy(_spec())
    spec["preconditions"]["environment"]["state"] = [{"namespace": "shop", **e} for e in entries]
    found: list[StateProblem] = state_problems(
        Scenario.model_validate({k: v for k, v in spec.items() if k != "profile"})
    )
    return [(p.path, p.message) for p in found]


def test_the_four_kinds_are_declared_by_their_abstract_type() -> None:
    assert {k: KINDS[k] for k in ("statefulset", "daemonset", "job", "cronjob")} == {
        "statefulset": StatefulSetState,
        "daemonset": DaemonSetState,
        "job": JobState,
        "cronjob": CronJobState,
    }


def test_every_workload_shares_the_deployments_pod_vocabulary() -> None:
    shared = set(PodTemplateState.model_fields)
    assert {"image", "containers", "env", "resource_limits", "volumes", "labels", "zone"} <= shared
    for model in (DeploymentState, StatefulSetState, DaemonSetState, JobState, CronJobState):
        assert issubclass(model, PodTemplateState)
        assert "status" in model.model_fields, model


GOOD = [
    {
        "resource": "statefulset/db",
        "replicas": 3,
        "image": "postgres:16.4",
        "status": "CrashLoopBackOff",
        "service_name": "db-headless",
        "volume_claim_templates": [
            {"name": "data", "storage": "10Gi", "access_modes": ["ReadWriteOnce"], "storage_class": "fast"}
        ],
        "pod_management_policy": "Parallel",
        "update_strategy": "OnDelete",
        "env": {"PGDATA": "/data/data/pg"},
        "resource_limits": {"memory": "1Gi"},
        "labels": {"tier": "data"},
        "annotations": {"owner": "dba"},
        "zone": "zone-a",
    },
    {
        "resource": "daemonset/log-agent",
        "node_selector": {"kubernetes.io/os": "linux"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "logs", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"operator": "Exists"},
        ],
        "update_strategy": "RollingUpdate",
        "status": "ImagePullBackOff",
    },
    {
        "resource": "job/migrate",
        "command": ["./migrate", "--to", "42"],
        "args": ["--verbose"],
        "completions": 3,
        "parallelism": 2,
        "completion_mode": "Indexed",
        "backoff_limit": 1,
        "active_deadline_seconds": 600,
        "ttl_seconds_after_finished": 3600,
        "restart_policy": "OnFailure",
        "suspend": False,
        "status": "failed",
    },
    {
        "resource": "cronjob/backup",
        "schedule": "30 2 * * MON-FRI",
        "time_zone": "Europe/Paris",
        "suspend": True,
        "concurrency_policy": "Forbid",
        "starting_deadline_seconds": 120,
        "successful_jobs_history_limit": 3,
        "failed_jobs_history_limit": 1,
        "backoff_limit": 0,
        "status": "complete",
    },
]  # fmt: skip


def test_entries_using_every_field_are_accepted() -> None:
    assert problems(*GOOD) == []
    parsed = parse_entry(0, StateEntry.model_validate({"namespace": "shop", **GOOD[0]}))
    assert isinstance(parsed, StatefulSetState)
    assert parsed.volume_claim_templates is not None
    assert parsed.volume_claim_templates[0].storage == "10Gi"


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (
            {"resource": "statefulset/db", "replica": 2},
            "replica",
            "unknown field(s) ['replica']; a statefulset takes: ['affinity', 'annotations', 'containers', "
            "'env', 'image', 'init_containers', 'labels', 'memory_limit', 'namespace', 'node_selector', "
            "'pod_management_policy', 'reason', 'replicas', 'resource_limits', 'resource_requests', "
            "'restarts', 'service_name', 'status', 'tolerations', 'update_strategy', "
            "'volume_claim_templates', 'volumes', 'volumes_from', 'zone']",
        ),
        (
            {"resource": "statefulset/db", "update_strategy": "Recreate"},
            "update_strategy",
            "unknown update_strategy 'Recreate'; write one of 'RollingUpdate' or 'OnDelete'",
        ),
        (
            {"resource": "statefulset/db", "service_name": "DB_Service"},
            "service_name",
            "'DB_Service' is not a valid name (lower-case letters, digits and '-', at most 63 "
            "characters)",
        ),
        (
            {"resource": "statefulset/db", "volume_claim_templates": [{"name": "data", "size": "1Gi"}]},
            "volume_claim_templates[0].size",
            "unknown field 'size'; "
            "it takes: ['access_modes', 'mount_path', 'name', 'storage', 'storage_class']",
        ),
        (
            {"resource": "statefulset/db", "volume_claim_templates": [{"name": "d", "mount_path": "data"}]},
            "volume_claim_templates[0].mount_path",
            "mount_path must be an absolute path, got 'data'; write e.g. /data/data",
        ),
        (
            {"resource": "statefulset/db", "volumes": ["data"], "volume_claim_templates": [{"name": "data"}]},
            None,
            "volume name(s) ['data'] given twice (volume_claim_templates and volumes share one list of "
            "pod volumes); rename one",
        ),
        (
            {"resource": "daemonset/agent",
             "tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]},
            "tolerations[0]",
            "a toleration with operator Exists takes no value; drop value or use Equal",
        ),
        (
            {"resource": "daemonset/agent", "tolerations": [{"key": "a", "tolerationSeconds": 30}]},
            "tolerations[0]",
            "tolerationSeconds applies only to effect: NoExecute",
        ),
        (
            {"resource": "daemonset/agent", "replicas": 3},
            "replicas",
            "unknown field(s) ['replicas']; a daemonset takes: ['affinity', 'annotations', 'containers', "
            "'env', 'image', 'init_containers', 'labels', 'memory_limit', 'namespace', 'node_selector', "
            "'reason', 'resource_limits', 'resource_requests', 'restarts', 'status', 'tolerations', "
            "'update_strategy', 'volumes', 'volumes_from', 'zone']",
        ),
        (
            {"resource": "job/migrate", "restart_policy": "Always"},
            "restart_policy",
            "unknown restart_policy 'Always'; write one of 'Never' or 'OnFailure'",
        ),
        (
            {"resource": "job/migrate", "active_deadline_seconds": -5},
            "active_deadline_seconds",
            "active_deadline_seconds is out of range: input should be greater than or equal to 0",
        ),
        (
            {"resource": "job/migrate", "completion_mode": "Indexed"},
            None,
            "completion_mode Indexed needs completions (how many indexes to run)",
        ),
        (
            {"resource": "job/migrate", "status": "done"},
            "status",
            "unknown status 'done'; write one of 'running', 'degraded', 'CrashLoopBackOff', 'OOMKilled', "
            "'pending', 'error', 'elevated_error_rate', 'rolling_update_in_progress', 'ImagePullBackOff', "
            "'complete' or 'failed'",
        ),
        (
            {"resource": "cronjob/backup"},
            None,
            "a cronjob needs schedule: a cron schedule such as '*/5 * * * *' or @hourly",
        ),
        (
            {"resource": "cronjob/backup", "schedule": "0 25 * * *"},
            "schedule",
            "cannot read '0 25 * * *' as a cron schedule: '25' is out of range for the hour field (0-23); "
            "write five fields (minute hour day-of-month month day-of-week, e.g. '*/5 * * * *') or a macro "
            "such as @hourly",
        ),
        (
            {"resource": "cronjob/backup", "schedule": "@hourly", "time_zone": "Mars/Olympus"},
            "time_zone",
            "unknown time zone 'Mars/Olympus'; write a tz database name such as Etc/UTC or Europe/Paris",
        ),
        (
            {"resource": "cronjob/backup", "schedule": "@hourly", "concurrency_policy": "Never"},
            "concurrency_policy",
            "unknown concurrency_policy 'Never'; write one of 'Allow', 'Forbid' or 'Replace'",
        ),
        (
            {"resource": "hpa/db", "target": "statefulset/db", "min_replicas": 0},
            "min_replicas",
            "min_replicas is out of range: input should be greater than or equal to 1",
        ),
        (
            {"resource": "pdb/db", "target": "statefulset/db", "min_available": "50"},
            "min_available",
            "cannot read '50' as pods; write a number of pods or a percentage such as 50%",
        ),
        (
            {"resource": "pdb/db", "target": "statefulset/db", "max_unavailable": -1},
            "max_unavailable",
            "-1 is below 0; write a number of pods or a percentage such as 50%",
        ),
        (
            {"resource": "hpa/db", "target": "daemonset/log-agent"},
            "target",
            "target must be deployment/<name> or statefulset/<name>, got 'daemonset/log-agent'",
        ),
    ],
)  # fmt: skip
def test_a_bad_entry_names_its_index_field_and_fix(
    entry: dict[str, Any], field: str | None, message: str
) -> None:
    # The bad entry comes second: the path names its index, not the first entry's.
    found = problems({"resource": "configmap/settings"}, entry)
    path = f"{STATE}[1].{field}" if field else f"{STATE}[1]"
    assert found == [(path, message)]


# Schedules and why the API server refuses them (None: it accepts them); the integration tests send each
# to a real API server (`tests/integration/sandbox/test_controller_kinds.py`).
CRON_SCHEDULES: list[tuple[str, str | None]] = [
    ("*/5 * * * *", None),
    ("0 0 1,15 * ?", None),
    ("0 9-17/2 * JAN-MAR sun", None),
    ("@midnight", None),
    ("@reboot", "unknown macro '@reboot'; write one of ['@annually', '@daily', '@hourly', '@midnight', "
     "'@monthly', '@weekly', '@yearly']"),
    ("* * * *", "it has 4 field(s), not 5"),
    ("*/0 * * * *", "cannot read '*/0' in the minute field"),
    ("? * * * *", None),  # the API server reads `?` as `*` in any field
    ("@every 1h30m", None),
    ("@every often", "cannot read '@every often' as an interval (write e.g. @every 1h30m)"),
    ("0 0 0 * *", "'0' is out of range for the day of month field (1-31)"),
    ("0 0 * * 7", "'7' is out of range for the day of week field (0-6)"),
    ("0 17-9 * * *", "the range '17-9' in the hour field ends before it begins"),
    ("CRON_TZ=UTC 0 * * * *", "a time zone is not written in the schedule; give it as time_zone"),
    ("0 0 * * SUN-SAT", None),
    ("H * * * *", "'H' is out of range for the minute field (0-59)"),
]  # fmt: skip


@pytest.mark.parametrize(("schedule", "problem"), CRON_SCHEDULES)
def test_cron_schedules_read_as_kubernetes_reads_them(schedule: str, problem: str | None) -> None:
    assert cron_problem(schedule) == problem


def test_an_hpa_and_a_pdb_may_target_a_statefulset() -> None:
    assert (
        problems(
            {"resource": "statefulset/db", "replicas": 2},
            {"resource": "hpa/db", "target": "statefulset/db", "min_replicas": 2, "max_replicas": 5},
            {"resource": "pdb/db", "target": "statefulset/db", "max_unavailable": 1},
        )
        == []
    )


def test_a_workloads_zone_is_vocabulary_that_name_mutation_keeps() -> None:
    spec = copy.deepcopy(_spec())
    spec["preconditions"]["environment"]["state"] = [
        {"resource": "statefulset/ledger", "namespace": "billing", "zone": "ledger-vault"},
        {"resource": "cronjob/backup", "namespace": "billing", "schedule": "@daily", "zone": "cold-store"},
    ]
    scenario = Scenario.model_validate({k: v for k, v in spec.items() if k != "profile"})
    assert {"ledger-vault", "cold-store"} <= set(scenario_zones(scenario))
