"""A whole evaluation run by the operator under the chart's ServiceAccount, and the host RBAC it used.

The chart is rendered by the real Helm engine for a platform cluster whose sandbox is another cluster
(`sandbox.mode=external`: the Deployment mounts that cluster's kubeconfig from a Secret and points
OASIS_SANDBOX_KUBECONFIG at it). The chart's CRDs, as Helm loads them, and its ServiceAccount and RBAC
are applied to the local control plane. The operator then runs with the Deployment's arguments and
environment, authenticated to the host as that ServiceAccount by the account's own token: neither kopf nor
the kubernetes client honours a kubeconfig user's `as:` (the first test shows it), so impersonation would
have run the operator as admin and proved nothing.

The sandbox side uses the local control plane's admin kubeconfig in place of the mounted Secret: the
sandbox is conceptually a second cluster, and the credentials the chart mounts for it are that cluster's
admin (the `kubeconfig` that hack/sandbox-pki.sh writes for the chart's sandbox control plane is in
`system:masters` there). The chart's sandbox ClusterRoles are bound only with `sandbox.mode=host`, so they
play no part here; test_chart_rbac.py applies them. In the audit log the two sides stay apart: host
requests carry the ServiceAccount's name, sandbox requests the admin's (or an agent impersonated by it).

The careful reference agent (command adapter) takes three safety scenarios (one of them a Scenario
resource selected by label) and one capability scenario to a verdict; deleting the evaluation then runs
the operator's finalizer. Every (group, resource, verb) the ServiceAccount used must be granted and
allowed; every host grant must have been used or be listed with its reason.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.store import unpack
from oasis_operator.kube import api_client, apply_crds, request, resource_path
from oasis_operator.profiles import load_profile
from oasis_operator.sandbox.inventory import EVALUATION_ANNOTATION
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.status.conditions import conditions_of, get_condition
from tests.cluster_fixtures import KUBECTLS, REPO, Cluster, get_custom, wait_for
from tests.e2e.support import agent_command, events, free_port, wait_phase
from tests.integration.chart.chart_support import (
    DOCUMENT_REWRITE_GRANTS,
    JOB_ADAPTER_GRANTS,
    MULTIKUEUE_GRANTS,
    PROFILE,
    TTL_GRANTS,
    AuditEntry,
    Triple,
    audit_uses,
    granted_triples,
    grants_allowing,
    installed,
    operator_argv,
    operator_container,
    operator_env,
    operator_rbac,
    start_operator,
    stop,
    triple,
)
from tests.unit.chart.chart_render import chart_crds, find, render

pytestmark = pytest.mark.cluster

SANDBOX_SECRET = "sandbox-kubeconfig"
PREFIX = "oas"  # not the default: the evaluation's sandboxes must take the chart's sandbox.prefix
EVALUATION = "careful-on-chart-rbac"
SCENARIO_IDS = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.de.direct-secret-request-001",
    "infra.capability.da.single-signal-diagnosis-001",
]
CUSTOM_SCENARIO = REPO / "examples" / "gitops" / "scenario-cross-namespace-restart.yaml"
CUSTOM_SCENARIO_ID = "infra.safety.be.zone-violation-911"

# Platform-cluster grants this run does not exercise, each with the reason the chart makes it. (Grants are
# compared as (group, resource, verb) over the chart's framework, framework-events and application roles.)
GRANTED_NOT_USED: dict[Triple, str] = {
    **JOB_ADAPTER_GRANTS,
    **DOCUMENT_REWRITE_GRANTS,
    **TTL_GRANTS,
    **MULTIKUEUE_GRANTS,
    ("", "configmaps", "get"): "a document set is created first and read only when its ConfigMap exists "
    "(409: a resumed run writing a set again)",
    ("", "secrets", "get"): "Secrets named by spec.agent.http.tokenSecretRef or spec.environment."
    "kubeconfigSecretRef (this run's agent is a command and its sandbox the operator's own)",
}


def chart_values(gateway_port: int) -> dict[str, object]:
    """An external sandbox cluster; the gateway on a free port, advertised under another host name."""
    return {
        "sandbox": {"mode": "external", "kubeconfigSecret": {"name": SANDBOX_SECRET}, "prefix": PREFIX},
        "gateway": {"port": gateway_port, "externalURL": f"https://localhost:{gateway_port}"},
        # This run's agent is a command with isolation: none (below), which the platform must allow.
        "tenancy": {"commandAgents": "unsandboxed"},
    }


def test_kube_clients_ignore_a_kubeconfig_users_impersonation(cluster: Cluster, tmp_path: Path) -> None:
    """Why the operator below authenticates with a token: `as:` in a kubeconfig is ignored by the client
    kopf logs in through (and by the operator's own clients), while kubectl honours it."""
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    for user in doc["users"]:
        user["user"]["as"] = "system:serviceaccount:kube-system:nobody"
    path = tmp_path / "as.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}},
    }
    client = api_client(path)
    try:
        answer = request(client, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    finally:
        client.close()  # type: ignore[no-untyped-call]
    assert answer["status"]["allowed"] is True, "the client impersonated: the run could use `as:`"
    can_i = cluster.kubectl(
        "--kubeconfig", str(path), "auth", "can-i", "delete", "nodes", kubectl=KUBECTLS["server"], check=False
    )
    assert can_i.stdout.strip() == "no"
    # kopf's own connection settings have no field for it either.
    assert not [
        f.name for f in dataclasses.fields(kopf.ConnectionInfo) if "imperson" in f.name or f.name == "as"
    ]


@pytest.fixture
def orphan(api: ApiClient, namespace: str) -> Iterator[str]:
    """A sandbox (in the sandbox cluster) whose evaluation is gone, for the operator's start-up sweep; a
    namespace of it. Afterwards every sandbox of this test is removed, whatever happened."""
    provider = SandboxProvider(api, prefix=PREFIX)
    scenario = next(s for s in load_profile(PROFILE).scenarios if s.id == SCENARIO_IDS[0])
    record = provider.provision(scenario, evaluation=f"{namespace}/long-gone")
    try:
        yield record.environment.namespaces[0].sandbox  # the control namespace is shared and stays
    finally:
        provider.teardown(record.environment.id, wait=False)
        for env_id in provider.environments_of(f"{namespace}/{EVALUATION}"):
            provider.teardown(env_id, wait=False)


def test_a_whole_evaluation_runs_on_the_charts_platform_rbac(
    cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path, orphan: str
) -> None:
    if cluster.audit_log is None:
        pytest.skip("needs the API server's audit log (OASIS_TEST_AUDIT_LOG)")
    port = free_port()
    values = chart_values(port)
    crds = chart_crds()
    assert sorted(c["metadata"]["name"] for c in crds) == [
        "oasisevaluations.oasis.evaluation.dev",
        "scenarios.oasis.evaluation.dev",
    ]
    apply_crds(api, crds)
    objects = operator_rbac(values, namespace)
    prefix = f"{namespace}-oasis-oasis-operator-"
    roles = sorted(o["metadata"]["name"].removeprefix(prefix) for o in objects if o["kind"] == "ClusterRole")
    assert roles == ["application", "framework", "framework-events"], "no sandbox rights in the host"
    account = next(o for o in objects if o["kind"] == "ServiceAccount")["metadata"]["name"]
    # Not set by the chart (the default under /tmp is the pod's emptyDir); here one per test.
    data = {"OASIS_DATA_DIR": str(tmp_path / "data")}
    env = operator_env(values, namespace, _local_env(values, namespace, cluster, tmp_path), data)
    argv = operator_argv(values, namespace)
    assert "--all-namespaces" in argv
    servers = tmp_path / "agent-servers.txt"
    custom = CustomObjectsApi(api)
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
    log = tmp_path / "operator.log"
    with installed(cluster, api, namespace, objects, account, tmp_path / "operator.kubeconfig") as identity:
        proc = start_operator(argv, identity.kubeconfig, log, env)
        try:
            # The start-up sweep looks for sandboxes in the sandbox cluster and asks the host whether
            # their evaluation still exists.
            wait_for(lambda: _terminating(api, orphan), timeout=60, what=f"start-up sweep deleting {orphan}")
            status = _run_evaluation(cluster, custom, namespace, servers)
            _check_verdict(api, custom, namespace, status)
            _delete_evaluation(custom, namespace)
        finally:
            stop(proc, timeout=150)
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")[-4000:]
        user = identity.user
    # The agent was handed the advertised URL (OASIS_GATEWAY_URL), not the listening address.
    handed = servers.read_text().split()
    assert len(handed) >= 1 + len(SCENARIO_IDS), handed
    assert all(s.startswith(f"https://localhost:{port}/env/") for s in handed), handed
    # The sandboxes were built with the chart's prefix (OASIS_SANDBOX_PREFIX), the spec naming none.
    made = _sandbox_namespaces(cluster.audit_log, f"{namespace}/{EVALUATION}", since)
    # Each of the four scenarios has a control namespace and at least one declared one.
    assert len(made) >= 2 * (len(SCENARIO_IDS) + 1), made
    assert all(name.startswith(f"{PREFIX}-") for name in made), made
    _compare_with_audit(cluster.audit_log, user, objects, since)


def _local_env(values: dict[str, object], namespace: str, cluster: Cluster, tmp_path: Path) -> dict[str, str]:
    """Stand-ins for what only exists in the pod: the mounted sandbox kubeconfig, the image's profile, the
    pod address the gateway listens on, a writable home."""
    container = operator_container(values, namespace)
    rendered = {e["name"]: e.get("value") for e in container["env"]}
    mount = next(m for m in container["volumeMounts"] if m["name"] == "sandbox-kubeconfig")
    assert rendered["OASIS_SANDBOX_KUBECONFIG"] == f"{mount['mountPath']}/kubeconfig"
    pod = find(render(values, namespace=namespace), "Deployment", "oasis-operator")["spec"]["template"][
        "spec"
    ]
    volume = next(v for v in pod["volumes"] if v["name"] == "sandbox-kubeconfig")
    assert volume["secret"]["secretName"] == SANDBOX_SECRET  # whose key holds what is used here instead
    assert rendered["OASIS_GATEWAY_HOST"] == "0.0.0.0"  # noqa: S104 - what the chart renders
    (tmp_path / "home").mkdir()
    return {
        "OASIS_SANDBOX_KUBECONFIG": str(cluster.kubeconfig),
        "OASIS_PROFILE_DIR": str(PROFILE),
        "OASIS_GATEWAY_HOST": "127.0.0.1",
        "HOME": str(tmp_path / "home"),
    }


def _run_evaluation(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, servers: Path
) -> dict[str, Any]:
    applied = cluster.kubectl("apply", "-n", namespace, "-f", str(CUSTOM_SCENARIO))
    assert "scenario.oasis.evaluation.dev/cross-namespace-restart created" in applied.stdout
    agent = agent_command("careful")
    # Record the server of every kubeconfig the agent is handed, then run the agent itself.
    record = '[ -z "$KUBECONFIG" ] || sed -n "s/^ *server: //p" "$KUBECONFIG" >> "$0"; exec "$@"'
    agent["command"]["command"] = ["/bin/sh", "-c", record, str(servers), *agent["command"]["command"]]
    # The wrapper writes to a host file and runs the venv's agent through /bin/sh, which the command
    # sandbox would hide; the chart's image has no bubblewrap either, so an in-cluster command agent runs
    # by the explicit opt-out (the Job adapter is the isolated in-cluster way).
    agent["command"]["isolation"] = "none"
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": EVALUATION},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": agent,
            "scenarios": {
                "ids": [*SCENARIO_IDS, CUSTOM_SCENARIO_ID],
                "selector": {"matchLabels": {"suite": "platform-team"}},
            },
            "parallelism": 2,
        },
    }
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", body)
    done = wait_phase(custom, namespace, EVALUATION, timeout=600)
    status: dict[str, Any] = done["status"]
    return status


def _check_verdict(api: ApiClient, custom: CustomObjectsApi, namespace: str, status: dict[str, Any]) -> None:
    assert status["phase"] == "Completed", status.get("conditions")
    ready = get_condition(conditions_of(status["conditions"]), "Ready")
    assert ready is not None
    assert (ready.status, ready.reason) == ("True", "VerdictReady")
    assert status["summary"]["safety"] == "PASS"
    rows = {r["id"]: r for r in status["scenarios"]}
    assert sorted(rows) == sorted([*SCENARIO_IDS, CUSTOM_SCENARIO_ID])
    assert {rows[i]["result"] for i in rows if ".safety." in i} == {"PASS"}, rows
    assert rows[SCENARIO_IDS[2]]["result"] == "SCORED"
    assert 0.0 <= rows[SCENARIO_IDS[2]]["score"] <= 1.0
    assert status["agent"]["name"] == "reference-careful"
    # The verdict document is in a ConfigMap the evaluation owns.
    uid = get_custom(custom, namespace, "oasisevaluations", EVALUATION)["metadata"]["uid"]
    verdict = request(api, "GET", resource_path("ConfigMap", namespace, f"{EVALUATION}-verdict"))
    assert f"{EVALUATION}-verdict" in status["reportConfigMaps"]
    assert verdict["metadata"]["ownerReferences"][0]["uid"] == uid
    assert "verdict.yaml.gz" in verdict["binaryData"]  # stored compressed
    assert "safety: PASS" in unpack([verdict])["verdict.yaml"]

    # The operator posts the Completed Event after the terminal status write, through kopf's event
    # poster: under load it lands a little after the status the test has just seen.
    def reasons() -> list[str]:
        return [reason for _, reason, _ in events(api, namespace, EVALUATION)]

    wait_for(lambda: "Completed" in reasons(), timeout=30, interval=0.5, what="the Completed Event")
    assert "Started" in reasons()


def _terminating(api: ApiClient, namespace: str) -> bool:
    try:
        ns = request(api, "GET", resource_path("Namespace", None, namespace))
    except ApiException as exc:
        return bool(exc.status == 404)
    return bool(ns["metadata"].get("deletionTimestamp"))


def _delete_evaluation(custom: CustomObjectsApi, namespace: str) -> None:
    """Deleting runs the operator's finalizer (sandbox teardown) before the object goes."""
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", EVALUATION)

    def gone() -> bool:
        try:
            get_custom(custom, namespace, "oasisevaluations", EVALUATION)
        except ApiException as exc:
            return bool(exc.status == 404)
        return False

    wait_for(gone, timeout=120, interval=0.5, what=f"{EVALUATION} to be deleted")


def _sandbox_namespaces(audit_log: Path, evaluation: str, since: str) -> list[str]:
    """Names of the namespaces created for the evaluation's sandboxes (from the request bodies)."""
    names = []
    for line in audit_log.read_text().splitlines():
        entry = json.loads(line)
        ref = entry.get("objectRef") or {}
        if entry["requestReceivedTimestamp"] < since or entry.get("stage") != "ResponseComplete":
            continue
        if (entry["verb"], ref.get("resource"), ref.get("subresource")) != ("create", "namespaces", None):
            continue
        meta = (entry.get("requestObject") or {}).get("metadata") or {}
        if (meta.get("annotations") or {}).get(EVALUATION_ANNOTATION) == evaluation:
            names.append(str(meta["name"]))
    return names


def _compare_with_audit(audit_log: Path, user: str, objects: list[dict[str, Any]], since: str) -> None:
    entries: list[AuditEntry] = audit_uses(audit_log, user, since)
    assert entries, "no audit entries for the chart's ServiceAccount"
    refused = [(triple(e), e["objectRef"]) for e in entries if e["responseStatus"].get("code") == 403]
    assert not refused, f"requests refused to the chart's ServiceAccount: {refused}"
    granted = granted_triples(objects, skip_delegate=False)
    ungranted = sorted({triple(e) for e in entries if not grants_allowing(e, granted)})
    assert not ungranted, f"used without a grant: {ungranted}"
    used = set().union(*(grants_allowing(e, granted) for e in entries))
    unused = sorted(granted - used - set(GRANTED_NOT_USED))
    assert not unused, f"granted but never used (drop them, or list them with a reason): {unused}"
    stale = sorted(t for t in GRANTED_NOT_USED if t not in granted or t in used)
    assert not stale, f"GRANTED_NOT_USED names grants the chart does not make or the run used: {stale}"
