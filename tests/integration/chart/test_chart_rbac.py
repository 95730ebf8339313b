"""The chart's RBAC, installed for real, is enough for what the operator does today and not much more.

The chart's ServiceAccount and RBAC (sandbox.mode=host: the local control plane is also the sandbox
cluster) are applied to the local API server. The operator then runs as that ServiceAccount, with its own
token: it validates a Scenario, accepts an OASISEvaluation (status and an Event), collects an orphaned
sandbox at start-up, and the sandbox provider builds and tears down shipped scenarios under the same
identity. Finally the API server's audit log says which (group, resource, verb) the identity used; every
use must be granted and succeed, and every direct grant must be used or listed below with its reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator.conditions import get_condition
from oasis_operator.kube import api_client, apply_crds, request, resource_path
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.dynamics import TwinReconciler
from oasis_operator.sandbox.naming import control_namespace
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.sandbox.twin import build_twin
from tests.cluster_fixtures import KUBECTLS, REPO, VENV_BIN, Cluster, get_custom, wait_for
from tests.integration.chart.chart_support import RBAC_KINDS, Identity, installed
from tests.unit.chart.chart_render import Manifest, chart_crds, find, render, rule_triples

pytestmark = pytest.mark.cluster

Triple = tuple[str, str, str]
AuditEntry = dict[str, Any]

# Direct grants the operator does not exercise today, each with the reason it is granted. Grants are
# compared as (group, resource, verb) over all direct roles together: ConfigMap create and Secret get
# are used today by the sandbox provider (the environment record, snapshots), later also for reports.
# (The `-sandbox-delegate` role is checked separately: it must equal the agent Roles of sandbox/rbac.py.)
GRANTED_NOT_YET_USED: dict[Triple, str] = {
    ("", "configmaps", "list"): "issue 7: verdict/report/evidence ConfigMaps owned by the evaluation",
    ("", "configmaps", "watch"): "issue 7: report ConfigMaps",
    ("", "configmaps", "patch"): "issue 7: report ConfigMaps",
    ("", "configmaps", "delete"): "issue 7: report ConfigMaps",
    (
        "",
        "serviceaccounts@agent",
        "impersonate",
    ): "the gateway forwards as the agent (checked by can-i below)",
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "create",
    ): "Argo CD Application CRD, once per cluster",
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions@applications.argoproj.io",
        "get",
    ): "then waits for it",
    ("policy", "poddisruptionbudgets", "create"): "PDBs a custom Scenario declares; no shipped one does",
    ("policy", "poddisruptionbudgets", "get"): "snapshot of a declared PDB (as above)",
}


HOST_VALUES: dict[str, object] = {"sandbox": {"mode": "host"}}
PROFILE = REPO / "profiles" / "software-infrastructure"


def _rbac_objects(namespace: str) -> list[Manifest]:
    objects = render(HOST_VALUES, namespace=namespace)
    return [
        o
        for o in objects
        if o["kind"] in RBAC_KINDS
        and "helm.sh/hook" not in o["metadata"].get("annotations", {})
        and not o["metadata"]["name"].endswith("-agent")
    ]


@pytest.fixture
def chart_identity(cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path) -> Iterator[Identity]:
    """The chart's ServiceAccount and RBAC applied for real, and a kubeconfig with that SA's own token."""
    crds = chart_crds()
    assert sorted(c["metadata"]["name"] for c in crds) == [
        "oasisevaluations.oasis.evaluation.dev",
        "scenarios.oasis.evaluation.dev",
    ]
    apply_crds(api, crds)  # the chart's own copies (the session installed the same from the models)
    objects = _rbac_objects(namespace)
    sa = next(o for o in objects if o["kind"] == "ServiceAccount")["metadata"]["name"]
    with installed(cluster, api, namespace, objects, sa, tmp_path / "operator.kubeconfig") as identity:
        yield identity


_NOW = datetime(2026, 1, 1, tzinfo=UTC)


def covering_scenarios() -> list[Scenario]:
    """Shipped scenarios that together declare every kind the shipped profile uses (greedy cover)."""
    scenarios = load_profile(default_profile_path()).scenarios
    kinds = {s.id: {o.kind for o in build_twin(s, "e0000000", "sbx", _NOW).objects} for s in scenarios}
    missing = set().union(*kinds.values())
    chosen = []
    while missing:
        best = max(scenarios, key=lambda s: (len(kinds[s.id] & missing), s.id))
        chosen.append(best)
        missing -= kinds[best.id]
    return chosen


def operator_argv(values: dict[str, object], namespace: str) -> list[str]:
    """`oasis` plus the args the chart's Deployment passes (after the image's `oasis operator` entrypoint),
    with the servers kept local and the profile taken from the checkout."""
    container = find(render(values, namespace=namespace), "Deployment", "oasis-operator")["spec"]["template"]
    args = container["spec"]["containers"][0]["args"]
    local = {
        "--bind": "127.0.0.1",
        "--liveness-port": "0",
        "--metrics-port": "0",
        "--profile-dir": str(PROFILE),
    }
    out = []
    for arg in args:
        flag = arg.split("=", 1)[0]
        out.append(f"{flag}={local[flag]}" if flag in local else arg)
    assert sorted(a.split("=", 1)[0] for a in args if a.split("=", 1)[0] in local) == sorted(local)
    return [str(VENV_BIN / "oasis"), "operator", *out]


def _start_operator(identity: Identity, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KUBECONFIG": str(identity.kubeconfig)}
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def audit_uses(audit_log: Path, user: str, since: str) -> list[AuditEntry]:
    """Audit entries of `user` (not impersonated) at or after `since` (RFC 3339)."""
    entries = []
    for line in audit_log.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("user", {}).get("username") != user or entry.get("impersonatedUser"):
            continue
        if entry["requestReceivedTimestamp"] >= since and entry.get("objectRef"):
            entries.append(entry)
    return entries


def _triple(entry: AuditEntry) -> Triple:
    ref = entry["objectRef"]
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (ref.get("apiGroup", ""), resource, str(entry["verb"]))


def _granted(objects: list[Manifest], skip_delegate: bool) -> set[Triple]:
    granted: set[Triple] = set()
    for role in objects:
        if role["kind"] in ("ClusterRole", "Role"):
            if skip_delegate and role["metadata"]["name"].endswith("-sandbox-delegate"):
                continue
            granted |= rule_triples(role["rules"])
    return granted


def grants_allowing(entry: AuditEntry, granted: set[Triple]) -> set[Triple]:
    """The granted triples that allow this request (a `resource@names` grant only for those names)."""
    group, resource, verb = _triple(entry)
    name = entry["objectRef"].get("name")
    return {
        (g, r, v)
        for g, r, v in granted
        if g == group
        and v == verb
        and (r == resource or (r.startswith(resource + "@") and name in r.split("@", 1)[1].split(",")))
    }


def test_operator_runs_on_the_charts_rbac_and_uses_what_it_is_granted(
    cluster: Cluster, api: ApiClient, namespace: str, chart_identity: Identity, tmp_path: Path
) -> None:
    if cluster.audit_log is None:
        pytest.skip("needs the API server's audit log (OASIS_TEST_AUDIT_LOG)")
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
    sa_api = api_client(chart_identity.kubeconfig)
    provider = SandboxProvider(sa_api, prefix="sbx")
    scenarios = covering_scenarios()
    created: list[str] = []
    try:
        # An orphan: a sandbox whose evaluation does not exist, left for the operator's start-up sweep.
        orphan = provider.provision(scenarios[0], evaluation=f"{namespace}/long-gone")
        created.append(orphan.environment.id)
        orphan_ns = orphan.environment.control_namespace
        argv = operator_argv(HOST_VALUES, namespace)
        assert "--all-namespaces" in argv
        proc = _start_operator(chart_identity, argv, tmp_path / "operator.log")
        try:
            _operator_flow(cluster, api, namespace, orphan_ns)
        finally:
            _stop(proc)
        # The sandbox provider under the chart's identity: build, reconcile and tear down shipped scenarios.
        for scenario in scenarios:
            record = provider.provision(scenario, evaluation=f"{namespace}/careful-agent")
            created.append(record.environment.id)
            TwinReconciler(provider, record).reconcile_once()
            report = provider.teardown(record.environment.id, wait=True, timeout=90)
            assert report.complete, report.remaining
        _check_impersonation(cluster, chart_identity, orphan.environment.id)
    finally:
        sa_api.close()  # type: ignore[no-untyped-call]
        admin = SandboxProvider(api, prefix="sbx")
        for env_id in created:  # nothing leaks when an assertion fails half-way (teardown is idempotent)
            admin.teardown(env_id, wait=False)
        log = tmp_path / "operator.log"
        if os.environ.get("OASIS_TEST_SHOW_OPERATOR_LOG") and log.exists():
            print(log.read_text())
    _compare_with_audit(cluster.audit_log, chart_identity, since)


def _operator_flow(cluster: Cluster, api: ApiClient, namespace: str, orphan_ns: str) -> None:
    custom = CustomObjectsApi(api)
    kubectl_out = cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "gitops"))
    assert "scenario.oasis.evaluation.dev/cross-namespace-restart created" in kubectl_out.stdout

    def valid() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, "scenarios", "cross-namespace-restart")
        condition = get_condition(obj.get("status", {}).get("conditions", []), "Valid")
        return dict(condition) if condition else None

    condition = wait_for(valid, timeout=60, what="Valid condition on the example Scenario")
    assert condition["status"] == "True", condition

    def phase() -> str | None:
        obj = get_custom(custom, namespace, "oasisevaluations", "careful-agent")
        return str(obj["status"]["phase"]) if obj.get("status", {}).get("phase") else None

    assert wait_for(phase, timeout=60, what="phase of the example evaluation") == "Pending"

    def accepted_event() -> bool:
        events = request(api, "GET", resource_path("Event", namespace))["items"]
        return any(
            bool(e["reason"] == "Accepted" and e["involvedObject"]["name"] == "careful-agent") for e in events
        )

    wait_for(accepted_event, timeout=30, what="Accepted event")

    def orphan_collected() -> bool:
        try:
            ns = request(api, "GET", resource_path("Namespace", None, orphan_ns))
        except ApiException as exc:
            return bool(exc.status == 404)
        return bool(ns["metadata"].get("deletionTimestamp"))

    wait_for(orphan_collected, timeout=60, what=f"start-up sweep deleting {orphan_ns}")


def _check_impersonation(cluster: Cluster, identity: Identity, env_id: str) -> None:
    """The operator may act as an environment's agent ServiceAccount, and as nobody else."""
    ns = control_namespace("sbx", env_id)

    def can_i(*args: str) -> str:
        result = cluster.kubectl(
            "auth", "can-i", *args, "--as", identity.user, kubectl=KUBECTLS["1.20"], check=False
        )
        return result.stdout.strip()

    assert can_i("impersonate", "serviceaccounts/agent", "-n", ns) == "yes"
    assert can_i("impersonate", "serviceaccounts/default", "-n", ns) == "no"
    assert can_i("impersonate", "users/admin") == "no"
    assert can_i("impersonate", "groups/system:masters") == "no"
    assert can_i("escalate", "clusterroles") == "no"


def _compare_with_audit(audit_log: Path, identity: Identity, since: str) -> None:
    entries = audit_uses(audit_log, identity.user, since)
    assert entries, "no audit entries for the chart's ServiceAccount"
    refused = [(_triple(e), e["objectRef"]) for e in entries if e["responseStatus"].get("code") == 403]
    assert not refused, f"requests refused to the chart's ServiceAccount: {refused}"
    granted = _granted(identity.objects, skip_delegate=False)
    ungranted = sorted({_triple(e) for e in entries if not grants_allowing(e, granted)})
    assert not ungranted, f"used without a grant: {ungranted}"
    direct = _granted(identity.objects, skip_delegate=True)
    used = set().union(*(grants_allowing(e, direct) for e in entries))
    unused = sorted(direct - used - set(GRANTED_NOT_YET_USED))
    assert not unused, f"granted but never used (drop them, or list them with a reason): {unused}"
    stale = sorted(t for t in GRANTED_NOT_YET_USED if t not in direct)
    assert not stale, f"allow-list names grants the chart does not make: {stale}"
    # The allow-list is for grants nothing uses yet; a used one must leave it (the CRD grants are used
    # only by the first environment with Applications in a cluster).
    now_used = sorted(t for t in GRANTED_NOT_YET_USED if t in used and t[0] != "apiextensions.k8s.io")
    assert not now_used, f"used now, drop from GRANTED_NOT_YET_USED: {now_used}"


NAMESPACED_VALUES: dict[str, object] = {
    "watch": {"clusterWide": False},
    "sandbox": {"mode": "external", "kubeconfigSecret": {"name": "sandbox-kubeconfig"}},
}


def test_namespaced_mode_rbac_is_enough_for_the_operator(
    cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Namespaced mode: RoleBindings in the watched namespace only, no sandbox rights in this cluster."""
    if cluster.audit_log is None:
        pytest.skip("needs the API server's audit log (OASIS_TEST_AUDIT_LOG)")
    objects = [
        o
        for o in render(NAMESPACED_VALUES, namespace=namespace)
        if o["kind"] in RBAC_KINDS
        and "helm.sh/hook" not in o["metadata"].get("annotations", {})
        and not o["metadata"]["name"].endswith("-agent")
    ]
    assert sorted(o["kind"] for o in objects if o["kind"].endswith("Binding")) == [
        "ClusterRoleBinding",
        "RoleBinding",
        "RoleBinding",
    ]
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
    sa = next(o for o in objects if o["kind"] == "ServiceAccount")["metadata"]["name"]
    with installed(cluster, api, namespace, objects, sa, tmp_path / "ns.kubeconfig") as identity:
        argv = operator_argv(NAMESPACED_VALUES, namespace)
        assert f"--namespace={namespace}" in argv
        proc = _start_operator(identity, argv, tmp_path / "operator.log")
        try:
            custom = CustomObjectsApi(api)
            cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "gitops"))

            def settled() -> bool:
                scenario = get_custom(custom, namespace, "scenarios", "cross-namespace-restart")
                evaluation = get_custom(custom, namespace, "oasisevaluations", "careful-agent")
                valid = get_condition(scenario.get("status", {}).get("conditions", []), "Valid") or {}
                return (
                    valid.get("status") == "True" and evaluation.get("status", {}).get("phase") == "Pending"
                )

            wait_for(settled, timeout=60, what="Scenario Valid and evaluation Pending")
            # Outside the watched namespace the identity can do nothing with the project's resources.
            can_i = ["auth", "can-i", "patch", "scenarios.oasis.evaluation.dev", "-n", "default"]
            denied = cluster.kubectl(*can_i, "--as", identity.user, check=False)
            assert denied.stdout.strip() == "no"
        finally:
            _stop(proc)
        entries = audit_uses(cluster.audit_log, identity.user, since)
        assert {_triple(e) for e in entries} >= {
            ("oasis.evaluation.dev", "scenarios/status", "patch"),
            ("oasis.evaluation.dev", "oasisevaluations/status", "patch"),
            ("", "events", "create"),
            ("", "namespaces", "watch"),
        }
        refused = [e["objectRef"] for e in entries if e["responseStatus"].get("code") == 403]
        assert not refused, refused
