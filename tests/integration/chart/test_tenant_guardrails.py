"""Tenant guardrails on the real API server, as a tenant ServiceAccount bound to `oasis-evaluation-edit`.

The chart's tenant roles and its ValidatingAdmissionPolicy are applied for real. The tenant may create an
evaluation; an evaluation with a command agent is refused at apply time by the policy (with
`tenancy.commandAgents=sandboxed`, only `isolation: none` is). Then, with no policy in the way, the
operator runs with the Deployment's arguments and environment (`OASIS_COMMAND_AGENTS=disabled`, the
chart's default) and refuses the command agent too, and refuses to send a Secret the tenant may not read
and that is not labelled for it, as an agent token or as a sandbox kubeconfig; once its owner labels the
token Secret (and the spec is touched), the evaluation gets past it to the agent.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi

from oasis_operator import AGENT_TOKEN_LABEL, SANDBOX_KUBECONFIG_LABEL
from oasis_operator.kube import apply_crds
from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for
from tests.e2e.support import agent_command, condition, evaluation, free_port, get, wait_phase
from tests.integration.chart.chart_support import (
    PROFILE,
    TENANT_ROLES,
    kubectl_stdin,
    operator_argv,
    operator_env,
    start_operator,
    stop,
    token_kubeconfig,
)
from tests.unit.chart.chart_render import Manifest, chart_crds, render

pytestmark = pytest.mark.cluster

TENANT = "tenant"
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
SCENARIO = {"ids": ["infra.safety.be.zone-violation-001"]}


def _tenancy_objects(values: dict[str, Any], namespace: str) -> list[Manifest]:
    """The chart's admission policy (and binding) and the tenants' ClusterRoles."""
    return [
        o
        for o in render(values, namespace=namespace)
        if o["kind"] in POLICY_KINDS or o["metadata"]["name"] in TENANT_ROLES
    ]


@pytest.fixture
def tenant(cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The chart's tenant roles applied, and a kubeconfig of a ServiceAccount bound to the edit role."""
    apply_crds(api, chart_crds())
    roles = [o for o in _tenancy_objects({}, namespace) if o["kind"] == "ClusterRole"]
    assert sorted(r["metadata"]["name"] for r in roles) == sorted(TENANT_ROLES)
    account: list[Manifest] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": TENANT, "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": TENANT, "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": TENANT_ROLES[0],
            },
            "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": namespace}],
        },
    ]
    kubectl_stdin(cluster, [*roles, *account], "apply", "-f", "-")
    try:
        yield token_kubeconfig(cluster, api, namespace, TENANT, tmp_path / "tenant.kubeconfig")
    finally:
        kubectl_stdin(cluster, roles, "delete", "--ignore-not-found", "-f", "-")


def _as(kubeconfig: Path, *args: str, stdin: Manifest | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl as the identity of `kubeconfig` (the server's release), not checked."""
    return subprocess.run(
        [KUBECTLS["server"], *args],
        input=yaml.safe_dump(stdin) if stdin is not None else None,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _apply(kubeconfig: Path, namespace: str, body: Manifest, *extra: str) -> subprocess.CompletedProcess[str]:
    return _as(kubeconfig, "apply", "-n", namespace, *extra, "-f", "-", stdin=body)


def _command(name: str, isolation: str = "sandbox") -> Manifest:
    agent = agent_command("careful")
    agent["command"]["isolation"] = isolation
    return evaluation(name, agent, scenarios=SCENARIO)


def _http(name: str, port: int, token_secret: str | None = None, **spec: Any) -> Manifest:
    agent: dict[str, Any] = {"name": "http-agent", "http": {"url": f"http://127.0.0.1:{port}"}}
    if token_secret:
        agent["http"]["tokenSecretRef"] = {"name": token_secret, "key": "token"}
    return evaluation(name, agent, scenarios=SCENARIO, **spec)


def _install_policy(cluster: Cluster, kubeconfig: Path, namespace: str, values: dict[str, Any]) -> None:
    """Apply the chart's policy for `values` and wait until the server enforces this version of it
    (policies are loaded by an informer a moment after they are written)."""
    policy = [o for o in _tenancy_objects(values, namespace) if o["kind"] in POLICY_KINDS]
    assert [o["kind"] for o in policy] == list(POLICY_KINDS)
    kubectl_stdin(cluster, policy, "apply", "-f", "-")
    sandboxed_allowed = values.get("tenancy", {}).get("commandAgents") == "sandboxed"

    def in_force() -> bool:
        unsandboxed = _apply(kubeconfig, namespace, _command("probe", "none"), "--dry-run=server")
        sandboxed = _apply(kubeconfig, namespace, _command("probe"), "--dry-run=server")
        return unsandboxed.returncode != 0 and (sandboxed.returncode == 0) == sandboxed_allowed

    wait_for(in_force, timeout=30, what="the admission policy in force")


def _remove_policy(cluster: Cluster, namespace: str) -> None:
    """Delete the policy and wait until the server no longer enforces it (its informer drops it a moment
    after the delete, as it loads it a moment after the write): a later test must not meet it."""
    policy = [o for o in _tenancy_objects({}, namespace) if o["kind"] in POLICY_KINDS]
    kubectl_stdin(cluster, policy, "delete", "--ignore-not-found", "-f", "-")

    def lifted() -> bool:
        probe = _apply(cluster.kubeconfig, namespace, _command("probe", "none"), "--dry-run=server")
        return probe.returncode == 0

    wait_for(lifted, timeout=30, what="the admission policy no longer in force")


def test_the_admission_policy_refuses_a_tenants_command_agent_at_apply_time(
    cluster: Cluster, namespace: str, tenant: Path
) -> None:
    assert _as(tenant, "auth", "can-i", "create", "oasisevaluations", "-n", namespace).stdout.strip() == "yes"
    assert _as(tenant, "auth", "can-i", "get", "secrets", "-n", namespace).stdout.strip() == "no"
    try:
        _install_policy(cluster, tenant, namespace, {})  # the chart's default: tenancy.commandAgents=disabled
        created = _apply(tenant, namespace, _http("by-http", free_port()))
        assert created.returncode == 0, created.stderr
        assert "oasisevaluation.oasis.evaluation.dev/by-http created" in created.stdout
        refused = _apply(tenant, namespace, _command("by-command"))
        assert refused.returncode != 0
        assert "denied request" in refused.stderr, refused.stderr
        assert "spec.agent.command: command agents are turned off on this cluster" in refused.stderr
        assert "tenancy.commandAgents=sandboxed" in refused.stderr
        assert "OASIS_COMMAND_AGENTS" in refused.stderr
        # Changing an accepted evaluation into a command agent is refused the same way.
        turned = _command("by-http")
        turned_agent = turned["spec"]["agent"]
        edit = {"spec": {"agent": {"http": None, "command": turned_agent["command"]}}}
        patched = _as(tenant, "patch", "oasisevaluation", "by-http", "-n", namespace, "--type=merge", "-p",
                      yaml.safe_dump(edit))  # fmt: skip
        assert patched.returncode != 0
        assert "command agents are turned off" in patched.stderr, patched.stderr

        _install_policy(cluster, tenant, namespace, {"tenancy": {"commandAgents": "sandboxed"}})
        sandboxed = _apply(tenant, namespace, _command("sandboxed"), "--dry-run=server")
        assert sandboxed.returncode == 0, sandboxed.stderr
        unsandboxed = _apply(tenant, namespace, _command("unsandboxed", "none"), "--dry-run=server")
        assert unsandboxed.returncode != 0
        assert "spec.agent.command.isolation: none is turned off on this cluster" in unsandboxed.stderr
        assert "tenancy.commandAgents=unsandboxed" in unsandboxed.stderr
    finally:
        _remove_policy(cluster, namespace)
        # Gone before the next test's operator (which watches every namespace) could pick it up.
        cluster.kubectl("delete", "oasisevaluation", "by-http", "-n", namespace, "--ignore-not-found")


def _secret(api: ApiClient, namespace: str, name: str, key: str, value: bytes) -> None:
    """A Secret made by its owner (the admin here), without the opt-in label."""
    body = {"metadata": {"name": name}, "data": {key: base64.b64encode(value).decode()}}
    CoreV1Api(api).create_namespaced_secret(namespace, body)


def _refused(custom: CustomObjectsApi, namespace: str, name: str, reason: str) -> str:
    """The Ready message of an evaluation that ended Failed with `reason`, no run started."""
    status = wait_phase(custom, namespace, name, timeout=180)["status"]
    ready = condition({"status": status}, "Ready")
    assert ready is not None, status
    assert (status["phase"], ready["reason"]) == ("Failed", reason), ready
    assert status.get("runGeneration") is None, "a refused spec stays open to a fix"
    return str(ready["message"])


def test_the_operator_refuses_a_tenants_command_agent_and_unlabelled_secrets(
    cluster: Cluster, api: ApiClient, namespace: str, tenant: Path, tmp_path: Path
) -> None:
    values: dict[str, Any] = {
        "sandbox": {"mode": "external", "kubeconfigSecret": {"name": "sandbox-kubeconfig"}},
        "gateway": {"port": free_port()},
    }
    (tmp_path / "home").mkdir()
    local = {
        "OASIS_SANDBOX_KUBECONFIG": str(cluster.kubeconfig),
        "OASIS_PROFILE_DIR": str(PROFILE),
        "OASIS_GATEWAY_HOST": "127.0.0.1",
        "HOME": str(tmp_path / "home"),
    }
    env = operator_env(values, namespace, local, {"OASIS_DATA_DIR": str(tmp_path / "data")})
    assert env["OASIS_COMMAND_AGENTS"] == "disabled"  # the chart's default
    _secret(api, namespace, "agent-token", "token", b"s3cret\n")
    _secret(api, namespace, "sandbox-cluster", "kubeconfig", cluster.kubeconfig.read_bytes())
    dead = free_port()
    # No admission policy here: the operator's own check is what refuses.
    for body in (
        _command("by-command", "none"),
        _http("token", dead, "agent-token"),
        _http(
            "kubeconfig",
            dead,
            environment={"kubeconfigSecretRef": {"name": "sandbox-cluster", "key": "kubeconfig"}},
        ),
    ):
        created = _apply(tenant, namespace, body)
        assert created.returncode == 0, created.stderr
    custom = CustomObjectsApi(api)
    log = tmp_path / "operator.log"
    proc = start_operator(operator_argv(values, namespace), cluster.kubeconfig, log, env)
    try:
        message = _refused(custom, namespace, "by-command", "CommandAgentNotAllowed")
        assert message.startswith("spec.agent.command: command agents are turned off on this operator")
        assert "OASIS_COMMAND_AGENTS=sandboxed" in message
        assert "tenancy.commandAgents=sandboxed" in message

        message = _refused(custom, namespace, "token", "SecretNotOptedIn")
        assert message.startswith(
            f"spec.agent.http.tokenSecretRef: Secret {namespace}/agent-token is not labelled "
            f'{AGENT_TOKEN_LABEL}="true"'
        )
        assert f"kubectl label secret agent-token -n {namespace} {AGENT_TOKEN_LABEL}=true" in message

        message = _refused(custom, namespace, "kubeconfig", "SecretNotOptedIn")
        assert message.startswith(
            f"spec.environment.kubeconfigSecretRef: Secret {namespace}/sandbox-cluster is not labelled "
            f'{SANDBOX_KUBECONFIG_LABEL}="true"'
        )

        # The owner opts the token in; the tenant touches the spec; the evaluation gets past the Secret
        # (to the agent, which does not answer: nothing listens on its port).
        cluster.kubectl("label", "secret", "agent-token", "-n", namespace, f"{AGENT_TOKEN_LABEL}=true")
        touch = {"spec": {"agent": {"http": {"timeoutSeconds": 30}}}}
        patched = _as(tenant, "patch", "oasisevaluation", "token", "-n", namespace, "--type=merge", "-p",
                      yaml.safe_dump(touch))  # fmt: skip
        assert patched.returncode == 0, patched.stderr

        def past_the_secret() -> dict[str, Any] | None:
            obj = get(custom, namespace, "token")
            ready = condition(obj, "Ready") or {}
            return (
                obj if ready.get("reason") not in (None, "SecretNotOptedIn", "Running", "Pending") else None
            )

        obj = wait_for(past_the_secret, timeout=180, what="the labelled token Secret accepted")
        assert condition(obj, "Ready")["reason"] == "AgentUnreachable", obj["status"]  # type: ignore[index]
    finally:
        stop(proc, timeout=60)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]
