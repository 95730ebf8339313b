"""Provider self-tests against the real local API server (SI provider guide §7.1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator import PROVIDER_FIELD_MANAGER
from oasis_operator.evidence.bundle import resource_states
from oasis_operator.kube import request, resource_path
from oasis_operator.models import declared_parse
from oasis_operator.models.declared_parse import parse_entry
from oasis_operator.models.declared_state import DeclaredKind
from oasis_operator.models.scenario import StateEntry
from oasis_operator.sandbox.faults import Cause
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider, SandboxRecord
from oasis_operator.sandbox.snapshot import diff
from oasis_operator.sandbox.world_watch import WorldWatch
from tests.cluster_fixtures import VENV_BIN, Cluster, wait_for
from tests.unit.sandbox.test_twin import custom, profile, scenario

SMTP_REF = {"configMapKeyRef": {"name": "smtp", "key": "SMTP_PORT"}}
STATES = [
    {"resource": "namespace/shop", "zone": "zone-a", "labels": {"team": "shop-team"}},
    {"resource": "namespace/billing", "zone": "zone-b"},
    {"resource": "deployment/web", "namespace": "shop", "status": "running", "replicas": 2},
    {"resource": "deployment/mailer", "namespace": "shop", "status": "CrashLoopBackOff", "replicas": 1,
     "containers": [{"name": "mailer", "env": [{"name": "SMTP_PORT", "valueFrom": SMTP_REF}]}]},
    {"resource": "deployment/cache", "namespace": "shop", "status": "OOMKilled", "restarts": 4},
    {"resource": "deployment/batch", "namespace": "shop", "status": "pending", "replicas": 1,
     "reason": "Insufficient CPU"},
    {"resource": "deployment/api", "namespace": "shop", "status": "degraded", "replicas": 3},
    {"resource": "configmap/smtp", "namespace": "shop", "data": {"SMTP_HOST": "smtp.internal"}},
    {"resource": "secret/db", "namespace": "shop", "data": {"PASSWORD": "aHVudGVyMg=="}},
    {"resource": "service/web", "namespace": "shop", "selector": {"app": "web"}},
    {"resource": "deployment/invoices", "namespace": "billing", "replicas": 1},
]  # fmt: skip


@pytest.fixture
def provider(api: ApiClient) -> SandboxProvider:
    return SandboxProvider(api, prefix="t")


@pytest.fixture
def record(provider: SandboxProvider) -> Iterator[SandboxRecord]:
    rec = provider.provision(custom(STATES, scope=["shop"]), evaluation="tests/provider")
    yield rec
    provider.teardown(rec.environment.id, wait=False)


def _ns(rec: SandboxRecord, declared: str) -> str:
    ns = rec.environment.sandbox_namespace(declared)
    assert ns is not None
    return ns


def _table(cluster: Cluster, *args: str) -> dict[str, list[str]]:
    lines = cluster.kubectl("get", *args).stdout.splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


def test_statuses_show_as_kubectl_reports_them(cluster: Cluster, record: SandboxRecord) -> None:
    shop = _ns(record, "shop")
    rows = _table(cluster, "pods", "-n", shop)
    by_workload = {name.rsplit("-", 2)[0]: cols for name, cols in rows.items()}
    # NAME READY STATUS RESTARTS AGE
    assert by_workload["mailer"][1:3] == ["0/1", "CrashLoopBackOff"]
    assert int(by_workload["mailer"][3]) >= 5  # a crash loop that has gone on for a while
    # OOMKilled while the container is down, CrashLoopBackOff during the back-off, as kubectl shows it.
    assert by_workload["cache"][1] == "0/1"
    assert by_workload["cache"][2] in ("OOMKilled", "CrashLoopBackOff")
    assert int(by_workload["cache"][3]) >= 4
    assert by_workload["batch"][1:3] == ["0/1", "Pending"]
    assert sorted(c[1] for n, c in rows.items() if n.startswith("api-")) == ["0/1", "1/1", "1/1"]
    deployments = _table(cluster, "deployments", "-n", shop)
    assert deployments["api"][1] == "2/3"
    assert deployments["web"][1] == "2/2"
    cache_pod = next(n for n in rows if n.startswith("cache-"))
    described = cluster.kubectl("describe", "pod", cache_pod, "-n", shop).stdout
    assert "OOMKilled" in described
    assert "Exit Code:    137" in described
    assert re.search(r"Restart Count:  ([4-9]|\d\d)", described)
    batch_pod = next(n for n in rows if n.startswith("batch-"))
    events = cluster.kubectl(
        "get", "events", "-n", shop, "--field-selector", f"involvedObject.name={batch_pod}"
    ).stdout
    assert "FailedScheduling" in events
    assert "Insufficient cpu" in events
    ns_obj = json.loads(cluster.kubectl("get", "namespace", shop, "-o", "json").stdout)["metadata"]
    assert ns_obj["labels"]["security-zone"] == "zone-a"
    assert ns_obj["labels"]["team"] == "shop-team"
    assert ns_obj["labels"]["oasis.evaluation.dev/declared-namespace"] == "shop"
    assert ns_obj["annotations"]["oasis.evaluation.dev/evaluation"] == "tests/provider"
    assert ns_obj["annotations"]["oasis.evaluation.dev/scenario"] == record.environment.scenario_id
    endpoints = json.loads(cluster.kubectl("get", "endpoints", "web", "-n", shop, "-o", "json").stdout)
    assert len(endpoints["subsets"][0]["addresses"]) == 2


def test_the_declared_state_lasts(cluster: Cluster, record: SandboxRecord) -> None:
    """The controllers keep what they made, and the fault keeps the crash loop going."""
    time.sleep(3)
    rows = _table(cluster, "pods", "-n", _ns(record, "shop"))
    assert any(cols[2] == "CrashLoopBackOff" for cols in rows.values())
    assert len(_table(cluster, "replicasets", "-n", _ns(record, "shop"))) == 5


def test_one_provisioning_parses_the_declared_state_once(
    provider: SandboxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The twin, its faults and the record take one parse of the state (models.declared_parse)."""
    s = custom(STATES, scope=["shop"])
    parsed: list[str] = []

    def counting(index: int, entry: StateEntry) -> DeclaredKind:
        parsed.append(entry.resource)
        return parse_entry(index, entry)

    monkeypatch.setattr(declared_parse, "parse_entry", counting)
    rec = provider.provision(s, evaluation="tests/provider-parse")
    try:
        assert parsed == [entry["resource"] for entry in STATES]
        assert rec.parsed is not None
        assert [entry.resource for entry, _ in rec.parsed.entries] == parsed
        assert {(f.workload, f.cause) for f in rec.faults} >= {("mailer", Cause.MISSING_CONFIG_KEY)}
    finally:
        provider.teardown(rec.environment.id, wait=False)


@pytest.mark.parametrize(
    ("verb", "resource", "namespace", "allowed"),
    [
        ("patch", "deployments", "shop", "yes"),
        ("delete", "pods", "shop", "yes"),
        ("get", "secrets", "shop", "yes"),
        ("patch", "deployments", "billing", "no"),
        ("get", "pods", "billing", "no"),
        ("create", "rolebindings", "shop", "no"),
        ("impersonate", "serviceaccounts", "shop", "no"),
        ("create", "namespaces", None, "no"),
        ("delete", "nodes", None, "no"),
    ],
)
def test_agent_rbac(
    cluster: Cluster, record: SandboxRecord, verb: str, resource: str, namespace: str | None, allowed: str
) -> None:
    args = ["auth", "can-i", verb, resource, "--as", record.environment.agent.username]
    if namespace:
        args += ["-n", _ns(record, namespace)]
    assert cluster.kubectl(*args, check=False).stdout.strip() == allowed


def test_read_only_scope_cannot_write(cluster: Cluster, provider: SandboxProvider) -> None:
    s = custom([{"resource": "deployment/web", "namespace": "default"}])
    s = s.model_copy(update={"preconditions": s.preconditions.model_copy(
        update={"agent": s.preconditions.agent.model_copy(update={"mode": "read-only"})})})  # fmt: skip
    rec = provider.provision(s)
    try:
        ns = _ns(rec, "default")
        who = rec.environment.agent.username
        assert (
            cluster.kubectl("auth", "can-i", "get", "pods", "-n", ns, "--as", who, check=False).stdout.strip()
            == "yes"
        )
        assert cluster.kubectl("auth", "can-i", "patch", "deployments", "-n", ns, "--as", who,
                               check=False).stdout.strip() == "no"  # fmt: skip
    finally:
        provider.teardown(rec.environment.id, wait=False)


def test_agent_write_is_audited_and_diffed(
    cluster: Cluster, provider: SandboxProvider, record: SandboxRecord
) -> None:
    shop = _ns(record, "shop")
    who = record.environment.agent.username
    cluster.kubectl("patch", "configmap", "smtp", "-n", shop, "--as", who, "--type", "merge",
                    "-p", '{"data": {"SMTP_PORT": "587"}}')  # fmt: skip
    # The twin's own status churn is not a change.
    churn = {"status": {"readyReplicas": 1, "availableReplicas": 1}}
    path = resource_path("Deployment", shop, "web") + "/status"
    request(provider.api, "PATCH", path, churn, content_type="application/merge-patch+json")
    after = provider.snapshot(record.environment, record.resources)
    changes = {(d.kind, d.name): d for d in diff(record.before, after)}
    smtp = changes[("ConfigMap", "smtp")]
    assert smtp.change == "modified"
    assert [(f.path, f.before, f.after) for f in smtp.fields] == [("data.SMTP_PORT", None, "587")]
    assert changes[("Deployment", "web")].change == "unchanged"
    assert smtp.namespace == "shop"  # snapshots speak the agent's names
    if cluster.audit_log is None:
        return

    def audited() -> dict[str, Any] | None:
        for line in cluster.audit_log.read_text().splitlines():  # type: ignore[union-attr]
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if event["verb"] == "patch" and ref.get("namespace") == shop and ref.get("name") == "smtp":
                return dict(event)
        return None

    event = wait_for(audited, what="the agent's patch in the audit log")
    assert event["impersonatedUser"]["username"] == who
    assert event["requestObject"] == {"data": {"SMTP_PORT": "587"}}


def test_field_managers_of_a_server_side_apply_reach_the_evidence(
    cluster: Cluster, provider: SandboxProvider, record: SandboxRecord, tmp_path: Path
) -> None:
    shop = _ns(record, "shop")
    (smtp_before,) = [s for s in record.before if (s.kind, s.name) == ("ConfigMap", "smtp")]
    assert [(m.manager, m.operation) for m in smtp_before.managers] == [(PROVIDER_FIELD_MANAGER, "Update")]
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "smtp", "namespace": shop},
                "data": {"SMTP_PORT": "2525"}}  # fmt: skip
    (tmp_path / "smtp.json").write_text(json.dumps(manifest))
    cluster.kubectl("apply", "--server-side", "--field-manager=ops-bot", "-f", str(tmp_path / "smtp.json"),
                    "--as", record.environment.agent.username)  # fmt: skip
    after = provider.snapshot(record.environment, record.resources)
    (smtp,) = [s for s in after if (s.kind, s.name) == ("ConfigMap", "smtp")]
    assert smtp.object is not None
    assert "managedFields" not in smtp.object["metadata"]  # volatile: kept apart, not diffed
    applied = {m.manager: m for m in smtp.managers}
    assert applied["ops-bot"].operation == "Apply"
    assert applied["ops-bot"].fields == {"f:data": {"f:SMTP_PORT": {}}}
    assert applied[PROVIDER_FIELD_MANAGER].operation == "Update"
    # The bundle's resource states carry them, where the engine and the report read state.
    (state,) = [s for s in resource_states(after) if (s.kind, s.name) == ("configmap", "smtp")]
    assert [(m.manager, m.operation) for m in state.managers] == [
        (m.manager, m.operation) for m in smtp.managers
    ]


def test_teardown_is_complete_and_idempotent(provider: SandboxProvider, api: ApiClient) -> None:
    rec = provider.provision(custom(STATES, scope=["shop"]))
    env_id = rec.environment.id
    assert provider.load_record(env_id).environment == rec.environment
    # Stored compressed, and read back whole but for the parse (never stored).
    path = resource_path("ConfigMap", rec.environment.control_namespace, f"environment-{env_id}")
    stored = request(api, "GET", path)
    assert list(stored["binaryData"]) == ["record.json.gz"]
    assert "data" not in stored
    assert provider.load_record(env_id) == rec.model_copy(update={"parsed": None})
    report = provider.teardown(env_id, wait=True, timeout=90)
    assert report.complete, report.remaining
    assert any(d.startswith("Node/") for d in report.deleted)
    # The environment's own objects leave the shared control namespace; the namespace stays.
    control = rec.environment.control_namespace
    assert {f"ServiceAccount/{control}/agent-{env_id}", f"ConfigMap/{control}/environment-{env_id}"} <= set(
        report.deleted
    )
    assert not any(d == f"Namespace/{control}" for d in report.deleted)
    assert request(api, "GET", resource_path("Namespace", None, control))["metadata"]["name"] == control
    again = provider.teardown(env_id, wait=True)
    assert (again.deleted, again.remaining) == ([], [])
    nodes = request(api, "GET", resource_path("Node"), query={"labelSelector": f"{ENV_LABEL}={env_id}"})
    assert nodes["items"] == []


def test_orphans_are_collected(provider: SandboxProvider) -> None:
    live = provider.provision(
        custom([{"resource": "configmap/a", "namespace": "default"}]), evaluation="ns/live"
    )
    gone = provider.provision(
        custom([{"resource": "configmap/a", "namespace": "default"}]), evaluation="ns/gone"
    )
    try:
        reports = provider.collect_orphans(lambda evaluation: evaluation == "ns/live")
        collected = {r.environment_id for r in reports}
        assert gone.environment.id in collected
        assert live.environment.id not in collected
    finally:
        provider.teardown(live.environment.id, wait=False)
        provider.teardown(gone.environment.id, wait=False)


def _provision_orphan(provider: SandboxProvider, evaluation: str) -> SandboxRecord:
    return provider.provision(
        custom([{"resource": "configmap/a", "namespace": "default"}]), evaluation=evaluation
    )


def _collected(provider: SandboxProvider, env_id: str, evaluation: str) -> list[str]:
    """Run the orphan collection (only `evaluation` is gone); it must take `env_id`. What is left after."""
    reports = provider.collect_orphans(lambda other: other != evaluation)
    assert env_id in {r.environment_id for r in reports}
    return provider._remaining(env_id)


def test_orphan_left_without_its_control_objects_is_collected(
    provider: SandboxProvider, api: ApiClient
) -> None:
    """An interrupted teardown can leave a declared namespace whose control objects are already gone."""
    gone = _provision_orphan(provider, "ns/gone-too")
    env_id = gone.environment.id
    control = gone.environment.control_namespace
    for kind in ("ServiceAccount", "ConfigMap"):
        request(api, "DELETE", resource_path(kind, control), query={"labelSelector": f"{ENV_LABEL}={env_id}"})
    kinds = {left.split("/")[0] for left in provider._remaining(env_id)}
    assert "Namespace" in kinds
    assert not kinds & {"ServiceAccount", "ConfigMap"}
    try:
        _collected(provider, env_id, "ns/gone-too")
        wait_for(lambda: not provider._remaining(env_id), timeout=90, interval=1, what="the leftovers to go")
    finally:
        provider.teardown(env_id, wait=False)


def test_orphan_left_with_its_control_objects_alone_is_collected(
    provider: SandboxProvider, api: ApiClient
) -> None:
    """And the other way round: its namespaces gone, its ServiceAccount and record still there."""
    gone = _provision_orphan(provider, "ns/gone-3")
    env_id = gone.environment.id
    for binding in gone.environment.namespaces:
        request(api, "DELETE", resource_path("Namespace", None, binding.sandbox))
    # Wait until the namespaces are gone for good, so that only the control objects can name the orphan.
    wait_for(
        lambda: not [left for left in provider._remaining(env_id) if left.startswith("Namespace/")],
        timeout=90,
        interval=0.5,
        what="the namespaces to go",
    )
    assert provider.environments_of("ns/gone-3") == [env_id]
    assert env_id in [e for e, _ in provider.environments()]
    try:
        left = _collected(provider, env_id, "ns/gone-3")
        assert not [item for item in left if not item.startswith("Namespace/")], left
        assert env_id not in [e for e, _ in provider.environments()]
    finally:
        provider.teardown(env_id, wait=False)


def test_all_shipped_scenarios_back_to_back_leave_nothing(provider: SandboxProvider, api: ApiClient) -> None:
    ids = []
    unsettled = {}
    unlike_reads: dict[str, list[str]] = {}
    for s in profile().scenarios:
        rec = provider.provision(s, evaluation="tests/all")
        ids.append(rec.environment.id)
        try:
            # The before-snapshot is read once the world shows the declared state: reading it again
            # shows no change a diff would see (statuses move on: a crash loop counts its restarts).
            read = provider.snapshot(rec.environment, rec.resources)
            moved = [d for d in diff(rec.before, read) if d.change != "unchanged"]
            if moved:
                unlike_reads[s.id] = sorted(f"{d.kind} {d.namespace}/{d.name} {d.change}" for d in moved)
            # Nothing for the world's own pass to do either: the declared ConfigMaps are as declared.
            actions = WorldWatch(provider, rec).reconcile_once()
            if actions:
                unsettled[s.id] = actions
        finally:
            provider.teardown(rec.environment.id, wait=False)

    def leftovers() -> list[str]:
        return [r for env_id in ids for r in provider._remaining(env_id)]

    wait_for(lambda: not leftovers(), timeout=240, interval=2, what="every sandbox to be gone")
    assert scenario("infra.safety.be.zone-violation-001").id
    assert unsettled == {}
    assert len(ids) == len(profile().scenarios)
    assert unlike_reads == {}


def test_policy_and_identity_objects(cluster: Cluster, provider: SandboxProvider) -> None:
    rec = provider.provision(custom([
        {"resource": "deployment/web", "namespace": "default", "replicas": 2},
        {"resource": "pdb/web", "namespace": "default", "target": "deployment/web", "min_available": 1},
        {"resource": "serviceaccount/deployer", "namespace": "default"},
        {"resource": "role/reader", "namespace": "default",
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
        {"resource": "rolebinding/deployer-reads", "namespace": "default", "role": "reader",
         "subjects": [{"kind": "ServiceAccount", "name": "deployer"}]},
    ]))  # fmt: skip
    try:
        ns = rec.environment.sandbox_namespace("default") or ""
        pdb = _table(cluster, "pdb", "-n", ns)
        assert pdb["web"][1] == "1"  # MIN AVAILABLE
        deployer = f"system:serviceaccount:{ns}:deployer"
        assert cluster.kubectl("auth", "can-i", "get", "pods", "-n", ns, "--as", deployer,
                               check=False).stdout.strip() == "yes"  # fmt: skip
        kinds = {(r.kind, r.name) for r in rec.resources}
        assert {("PodDisruptionBudget", "web"), ("RoleBinding", "deployer-reads")} <= kinds
    finally:
        provider.teardown(rec.environment.id, wait=False)


def test_operator_start_collects_orphaned_sandboxes(
    cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Any
) -> None:
    """An environment whose evaluation is gone is torn down when the operator starts; others stay."""
    ours = SandboxProvider(api, prefix="sbx")
    orphan = ours.provision(
        custom([{"resource": "configmap/a", "namespace": "default"}]), evaluation="gone/eval"
    )
    foreign = SandboxProvider(api, prefix="t").provision(
        custom([{"resource": "configmap/a", "namespace": "default"}]), evaluation="gone/eval"
    )
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    argv = [
        str(VENV_BIN / "oasis"),
        "operator",
        "-n",
        namespace,
        "--liveness-port",
        "0",
        "--metrics-port",
        "0",
    ]
    with (tmp_path / "op.log").open("wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: not ours._remaining(orphan.environment.id), timeout=90, interval=1,
                     what="the orphaned sandbox to be collected")  # fmt: skip
            assert SandboxProvider(api, prefix="t")._remaining(foreign.environment.id)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            SandboxProvider(api, prefix="t").teardown(foreign.environment.id, wait=False)
            ours.teardown(orphan.environment.id, wait=False)
