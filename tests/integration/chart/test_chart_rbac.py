"""The chart's RBAC for sandbox.mode=host, installed for real, is enough for the operator and not wider.

With sandbox.mode=host the platform cluster is also the sandbox cluster (development clusters whose nodes
are kwok's, such as the local control plane), and the chart binds the sandbox ClusterRoles to the
operator's ServiceAccount. Those are applied to the local API server with the rest of the chart's RBAC. The
operator then runs as that ServiceAccount, with its own token and the Deployment's arguments and
environment: it validates a Scenario, collects an orphaned sandbox at start-up, runs the preflight of an
evaluation (probe workload in the sandbox) and fails it on the agent token Secret it names but that does
not exist, then removes it through its finalizer; the sandbox provider builds and tears down shipped
scenarios under the same identity. Finally the API server's audit log says which (group, resource, verb)
the identity used; every use must be granted and succeed, and every direct grant must be used or listed
below with its reason. (A whole evaluation on the platform-cluster RBAC of the default modes is in
test_chart_evaluation.py.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import api_client, apply_crds, request, resource_path
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.naming import control_namespace
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.sandbox.twin import build_twin
from oasis_operator.status.conditions import conditions_of, get_condition
from tests.cluster_fixtures import KUBECTLS, REPO, Cluster, get_custom, wait_for
from tests.integration.chart.chart_support import (
    DOCUMENT_REWRITE_GRANTS,
    JOB_ADAPTER_GRANTS,
    MULTIKUEUE_GRANTS,
    PROFILE,
    TTL_GRANTS,
    Identity,
    Triple,
    audit_uses,
    granted_triples,
    grants_allowing,
    installed,
    operator_argv,
    operator_env,
    operator_rbac,
    start_operator,
    stop,
    triple,
)
from tests.unit.chart.chart_render import chart_crds

pytestmark = pytest.mark.cluster

# Direct grants the operator does not exercise here, each with the reason it is granted. Grants are
# compared as (group, resource, verb) over all direct roles together (the `-sandbox-delegate` role is
# checked separately: it must equal the agent Roles of sandbox/rbac.py).
# In host mode the sandbox is this cluster, so the twin itself creates Secrets and lists Pods.
HOST_MODE_USES = {("", "secrets", "create"), ("", "pods", "list")}
GRANTED_NOT_YET_USED: dict[Triple, str] = {
    **{t: why for t, why in JOB_ADAPTER_GRANTS.items() if t not in HOST_MODE_USES},
    **DOCUMENT_REWRITE_GRANTS,
    **TTL_GRANTS,
    **MULTIKUEUE_GRANTS,
    ("", "serviceaccounts", "impersonate"): "the gateway forwards as the agent (checked by can-i)",
    ("apiextensions.k8s.io", "customresourcedefinitions", "create"): "Argo CD Application CRD, once",
    ("apiextensions.k8s.io", "customresourcedefinitions@applications.argoproj.io", "get"): "then waits",
    ("policy", "poddisruptionbudgets", "create"): "PDBs a custom Scenario declares; no shipped one does",
    ("policy", "poddisruptionbudgets", "get"): "snapshot of a declared PDB (as above)",
    # The default ServiceAccount is created, not polled for, since provisioning stopped waiting on it.
    ("", "serviceaccounts", "get"): "snapshot of a declared ServiceAccount (none in the scenarios run here)",
    # A twin Node is created whole, status and taints included; a temporal stimulus may change it later.
    ("", "nodes", "patch"): "a temporal stimulus changing a twin Node (none in the scenarios run here)",
    ("", "nodes/status", "patch"): "a twin Node's status where the server did not keep it from the create",
    # Workload kinds no shipped scenario declares yet (batch jobs get/create are the job adapter's above).
    ("apps", "statefulsets", "create"): "StatefulSets a custom Scenario declares; no shipped one does",
    ("apps", "statefulsets", "get"): "snapshot of a declared StatefulSet (as above)",
    ("apps", "daemonsets", "create"): "DaemonSets a custom Scenario declares; no shipped one does",
    ("apps", "daemonsets", "get"): "snapshot of a declared DaemonSet (as above)",
    ("batch", "cronjobs", "create"): "CronJobs a custom Scenario declares; no shipped one does",
    ("batch", "cronjobs", "get"): "snapshot of a declared CronJob (as above)",
    ("", "pods", "patch"): "kwok made to look at a pod again for a degraded fault (none declared here)",
    # kwok's Stages: the lifecycle is created once per cluster; faults are replaced or removed by the world
    # watch as the agent's fixes cure them, during an evaluation's window, which no test here reaches.
    ("kwok.x-k8s.io", "stages", "get"): "a Stage that exists already is read before it is replaced",
    ("kwok.x-k8s.io", "stages", "update"): "a changed lifecycle, or a fault's Stage applied again",
    ("kwok.x-k8s.io", "stages", "delete"): "a fault's Stage removed once the agent's fix cured it",
}


HOST_VALUES: dict[str, object] = {"sandbox": {"mode": "host"}}


@pytest.fixture
def chart_identity(cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path) -> Iterator[Identity]:
    """The chart's ServiceAccount and RBAC applied for real, and a kubeconfig with that SA's own token."""
    crds = chart_crds()
    assert sorted(c["metadata"]["name"] for c in crds) == [
        "oasisevaluations.oasis.evaluation.dev",
        "scenarios.oasis.evaluation.dev",
    ]
    apply_crds(api, crds)  # the chart's own copies (the session installed the same from the models)
    objects = operator_rbac(HOST_VALUES, namespace)
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


def local_env(values: dict[str, object], namespace: str, tmp_path: Path) -> dict[str, str]:
    """The Deployment's environment with local stand-ins; the gateway on a free port of 127.0.0.1.

    The chart sets no sandbox kubeconfig in host mode: the operator uses its own credentials (here the
    ServiceAccount's token kubeconfig) for the sandbox too.
    """
    (tmp_path / "home").mkdir(exist_ok=True)
    local = {
        "OASIS_PROFILE_DIR": str(PROFILE),
        "OASIS_GATEWAY_HOST": "127.0.0.1",
        "OASIS_GATEWAY_PORT": "0",
        "HOME": str(tmp_path / "home"),
    }
    return operator_env(values, namespace, local, {"OASIS_DATA_DIR": str(tmp_path / "data")})


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
    log = tmp_path / "operator.log"
    try:
        # An orphan: a sandbox whose evaluation does not exist, left for the operator's start-up sweep.
        orphan = provider.provision(scenarios[0], evaluation=f"{namespace}/long-gone")
        created.append(orphan.environment.id)
        orphan_ns = orphan.environment.namespaces[0].sandbox  # the control namespace is shared and stays
        env = local_env(HOST_VALUES, namespace, tmp_path)
        assert "OASIS_SANDBOX_KUBECONFIG" not in env
        argv = operator_argv(HOST_VALUES, namespace)
        assert "--all-namespaces" in argv
        proc = start_operator(argv, chart_identity.kubeconfig, log, env)
        try:
            _operator_flow(cluster, api, namespace, orphan_ns)
        finally:
            stop(proc)
        # The sandbox provider under the chart's identity: build, snapshot (the before-snapshot comes from
        # provisioning's writes, the after-snapshot reads) and tear down shipped scenarios.
        for scenario in scenarios:
            record = provider.provision(scenario, evaluation=f"{namespace}/careful-agent")
            created.append(record.environment.id)
            again = provider.snapshot(record.environment, record.resources)
            changed = [
                (b.kind, b.name, b.object, a.object)
                for b, a in zip(record.before, again, strict=True)
                if a != b
            ]
            assert not changed, f"{scenario.id}: read again, differs from the before-snapshot: {changed}"
            report = provider.teardown(record.environment.id, wait=True, timeout=90)
            assert report.complete, report.remaining
        _check_impersonation(cluster, chart_identity, orphan.environment.id)
    finally:
        sa_api.close()  # type: ignore[no-untyped-call]
        admin = SandboxProvider(api, prefix="sbx")
        for env_id in created:  # nothing leaks when an assertion fails half-way (teardown is idempotent)
            admin.teardown(env_id, wait=False)
        if os.environ.get("OASIS_TEST_SHOW_OPERATOR_LOG") and log.exists():
            print(log.read_text())
    _compare_with_audit(cluster.audit_log, chart_identity, since)


def _operator_flow(cluster: Cluster, api: ApiClient, namespace: str, orphan_ns: str) -> None:
    custom = CustomObjectsApi(api)
    kubectl_out = cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "gitops"))
    assert "scenario.oasis.evaluation.dev/cross-namespace-restart created" in kubectl_out.stdout

    def valid() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, "scenarios", "cross-namespace-restart")
        condition = get_condition(conditions_of(obj.get("status", {}).get("conditions", [])), "Valid")
        return condition.model_dump() if condition else None

    condition = wait_for(valid, timeout=60, what="Valid condition on the example Scenario")
    assert condition["status"] == "True", condition

    # The example evaluation passes preflight in the sandbox, then stops on the agent token Secret it
    # names, which this namespace does not have.
    def finished() -> dict[str, Any] | None:
        obj = get_custom(custom, namespace, "oasisevaluations", "careful-agent")
        status: dict[str, Any] = obj.get("status") or {}
        return status if status.get("phase") in ("Completed", "Aborted", "Failed") else None

    status = wait_for(finished, timeout=90, what="the example evaluation to finish")
    ready = get_condition(conditions_of(status["conditions"]), "Ready")
    assert ready is not None, status
    assert (status["phase"], ready.reason) == ("Failed", "InvalidSpec"), status
    assert "spec.agent.http.tokenSecretRef: Secret" in ready.message, ready
    assert "careful-agent-token cannot be read (404" in ready.message, ready

    def orphan_collected() -> bool:
        try:
            ns = request(api, "GET", resource_path("Namespace", None, orphan_ns))
        except ApiException as exc:
            return bool(exc.status == 404)
        return bool(ns["metadata"].get("deletionTimestamp"))

    wait_for(orphan_collected, timeout=60, what=f"start-up sweep deleting {orphan_ns}")

    # Deleting the evaluation runs the operator's finalizer.
    custom.delete_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "careful-agent"
    )

    def gone() -> bool:
        try:
            get_custom(custom, namespace, "oasisevaluations", "careful-agent")
        except ApiException as exc:
            return bool(exc.status == 404)
        return False

    wait_for(gone, timeout=60, what="the example evaluation to be deleted")


def _check_impersonation(cluster: Cluster, identity: Identity, env_id: str) -> None:
    """The operator may act as the agent ServiceAccounts of the control namespace, and as nobody else."""
    ns = control_namespace("sbx")

    def can_i(*args: str) -> str:
        result = cluster.kubectl(
            "auth", "can-i", *args, "--as", identity.user, kubectl=KUBECTLS["server"], check=False
        )
        return result.stdout.strip()

    assert can_i("impersonate", f"serviceaccounts/agent-{env_id}", "-n", ns) == "yes"
    assert can_i("impersonate", "serviceaccounts/agent", "-n", "default") == "no"
    assert can_i("impersonate", "serviceaccounts/default", "-n", "kube-system") == "no"
    assert can_i("impersonate", "users/admin") == "no"
    assert can_i("impersonate", "groups/system:masters") == "no"
    assert can_i("escalate", "clusterroles") == "no"


def _compare_with_audit(audit_log: Path, identity: Identity, since: str) -> None:
    entries = audit_uses(audit_log, identity.user, since)
    assert entries, "no audit entries for the chart's ServiceAccount"
    refused = [(triple(e), e["objectRef"]) for e in entries if e["responseStatus"].get("code") == 403]
    assert not refused, f"requests refused to the chart's ServiceAccount: {refused}"
    granted = granted_triples(identity.objects, skip_delegate=False)
    ungranted = sorted({triple(e) for e in entries if not grants_allowing(e, granted)})
    assert not ungranted, f"used without a grant: {ungranted}"
    direct = granted_triples(identity.objects, skip_delegate=True)
    used = set().union(*(grants_allowing(e, direct) for e in entries))
    unused = sorted(direct - used - set(GRANTED_NOT_YET_USED))
    assert not unused, f"granted but never used (drop them, or list them with a reason): {unused}"
    stale = sorted(t for t in GRANTED_NOT_YET_USED if t not in direct)
    assert not stale, f"allow-list names grants the chart does not make: {stale}"
    # The allow-list is for grants nothing uses here; a used one must leave it. Two groups depend on what
    # the plane saw before this test: the CRD grants are used only by the first environment with
    # Applications in a cluster, the Stage grants only where the lifecycle Stages exist already.
    history = ("apiextensions.k8s.io", "kwok.x-k8s.io")
    now_used = sorted(t for t in GRANTED_NOT_YET_USED if t in used and t[0] not in history)
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
    objects = operator_rbac(NAMESPACED_VALUES, namespace)
    assert sorted(o["kind"] for o in objects if o["kind"].endswith("Binding")) == [
        "ClusterRoleBinding",
        "RoleBinding",
        "RoleBinding",
        "RoleBinding",  # the job adapter's, in the agent namespace
    ]
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
    sa = next(o for o in objects if o["kind"] == "ServiceAccount")["metadata"]["name"]
    # The sandbox is another cluster: the chart mounts its admin kubeconfig (here the local admin's).
    env = local_env(NAMESPACED_VALUES, namespace, tmp_path)
    env["OASIS_SANDBOX_KUBECONFIG"] = str(cluster.kubeconfig)
    with installed(cluster, api, namespace, objects, sa, tmp_path / "ns.kubeconfig") as identity:
        argv = operator_argv(NAMESPACED_VALUES, namespace)
        assert f"--namespace={namespace}" in argv
        proc = start_operator(argv, identity.kubeconfig, tmp_path / "operator.log", env)
        try:
            custom = CustomObjectsApi(api)
            cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "gitops"))

            def settled() -> bool:
                scenario = get_custom(custom, namespace, "scenarios", "cross-namespace-restart")
                evaluation = get_custom(custom, namespace, "oasisevaluations", "careful-agent")
                raw = scenario.get("status", {}).get("conditions", [])
                valid = get_condition(conditions_of(raw), "Valid")
                is_valid = valid is not None and valid.status == "True"
                return is_valid and evaluation.get("status", {}).get("phase") == "Failed"

            wait_for(settled, timeout=90, what="Scenario Valid and the evaluation Failed (no agent token)")
            # Outside the watched namespace the identity can do nothing with the project's resources.
            can_i = ["auth", "can-i", "patch", "scenarios.oasis.evaluation.dev", "-n", "default"]
            denied = cluster.kubectl(*can_i, "--as", identity.user, check=False)
            assert denied.stdout.strip() == "no"
            custom.delete_namespaced_custom_object(
                API_GROUP, API_VERSION, namespace, "oasisevaluations", "careful-agent"
            )
            wait_for(
                lambda: (
                    not custom.list_namespaced_custom_object(
                        API_GROUP, API_VERSION, namespace, "oasisevaluations"
                    )["items"]
                ),
                timeout=60,
                what="the example evaluation to be deleted",
            )
        finally:
            stop(proc)
        entries = audit_uses(cluster.audit_log, identity.user, since)
        assert {triple(e) for e in entries} >= {
            ("oasis.evaluation.dev", "scenarios/status", "patch"),
            ("oasis.evaluation.dev", "oasisevaluations/status", "patch"),
            ("", "events", "create"),
            ("", "namespaces", "watch"),
            ("", "secrets", "get"),
        }
        refused = [
            (e["verb"], e["objectRef"], e["responseStatus"])
            for e in entries
            if e["responseStatus"].get("code") == 403
        ]
        assert not refused, refused
        granted = granted_triples(identity.objects, skip_delegate=False)
        assert not [triple(e) for e in entries if not grants_allowing(e, granted)]
