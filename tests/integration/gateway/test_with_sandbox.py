"""The gateway in front of environments built by the real sandbox provider from shipped scenarios."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, RbacAuthorizationV1Api

from oasis_operator import PROVIDER_FIELD_MANAGER
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.sandbox.rbac import ROLE_NAME
from tests.cluster_fixtures import KUBECTLS, Cluster
from tests.integration.gateway.twin import GatewayThread
from tests.unit.sandbox.test_twin import scenario

SESSION = [
    ["get", "all", "-A", "-o", "wide"],
    ["get", "namespaces", "--show-labels"],
    ["get", "nodes", "-o", "yaml"],
    ["describe", "pods", "-A"],
    ["get", "events", "-A"],
    ["get", "configmaps,secrets,serviceaccounts,roles,rolebindings", "-o", "yaml"],
    ["top", "nodes"],
    ["top", "pods", "-A"],
    ["auth", "can-i", "--list"],
]
# Words the twin must never show the agent (DESIGN §3), and what would reveal the sandbox itself.
CAPTIONS = ("oasis", "sandbox", "simulation", "fake", "mock")


@pytest.fixture(scope="module")
def gateway(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayThread]:
    gw = GatewayThread(cluster.kubeconfig, tmp_path_factory.mktemp("sandboxed") / "data")
    yield gw
    gw.stop()


@pytest.mark.parametrize(
    "scenario_id",
    [
        "infra.safety.be.zone-violation-001",
        "infra.capability.da.misleading-signal-001",
        "infra.capability.da.multi-signal-correlation-001",
    ],
)
def test_a_provisioned_environment_shows_no_trace_of_the_sandbox(
    gateway: GatewayThread, api: ApiClient, tmp_path: Path, scenario_id: str
) -> None:
    provider = SandboxProvider(api, prefix="gw")
    record = provider.provision(scenario(scenario_id), evaluation="tests/gateway")
    env = record.environment
    try:
        creds = gateway.gateway.register(env)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(creds.kubeconfig_yaml)
        environ = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
        marks = [f"{env.prefix}-{env.id}", env.control_namespace, gateway.gateway.upstream.config.server]
        outputs = []
        for args in SESSION:
            result = subprocess.run([KUBECTLS["current"], *args], env=environ, capture_output=True, text=True,
                                    timeout=60, check=False)  # fmt: skip
            text = result.stdout + result.stderr
            assert not [m for m in marks if m in text], f"kubectl {' '.join(args)}: {text[:400]}"
            assert not [c for c in CAPTIONS if c in text.lower()], f"kubectl {' '.join(args)}: {text[:400]}"
            outputs.append(result)
        assert outputs[0].returncode == 0
        declared = sorted(b.declared for b in env.namespaces)
        shown = sorted(line.split()[0] for line in outputs[1].stdout.splitlines()[1:])
        assert shown == declared
        assert outputs[6].returncode == 0, outputs[6].stderr  # kubectl top nodes
        evidence = gateway.gateway.evidence(env.id)
        assert evidence.available
        assert len([e for e in evidence.entries if e.resource]) >= len(SESSION)
    finally:
        gateway.gateway.revoke(env.id)
        provider.teardown(env.id, wait=False)


def test_the_agent_sees_none_of_the_provider_s_bookkeeping(
    gateway: GatewayThread, api: ApiClient, tmp_path: Path
) -> None:
    provider = SandboxProvider(api, prefix="gw")
    record = provider.provision(scenario("infra.safety.be.zone-violation-001"), evaluation="tests/gateway")
    env = record.environment
    try:
        creds = gateway.gateway.register(env)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(creds.kubeconfig_yaml)
        environ = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([KUBECTLS["current"], *args], env=environ, capture_output=True, text=True,
                                  timeout=60, check=False)  # fmt: skip

        home = gateway.gateway.state(env.id).names.home_namespace
        shown = kubectl("get", "namespaces", "-o", "json", "--show-managed-fields")
        assert shown.returncode == 0, shown.stderr
        for ns in json.loads(shown.stdout)["items"]:
            meta = ns["metadata"]
            assert "ownerReferences" not in meta, meta  # the sandbox's teardown owner
            assert PROVIDER_FIELD_MANAGER not in {m["manager"] for m in meta.get("managedFields", [])}
        nodes = kubectl("get", "nodes", "-o", "json", "--show-managed-fields")
        for node in json.loads(nodes.stdout)["items"]:
            assert "ownerReferences" not in node["metadata"]
        # Let the agent read RBAC in its home namespace, as a scenario may: it sees this, not the provider's.
        rbac: Any = RbacAuthorizationV1Api(api)
        sandbox_home = env.sandbox_namespace(home)
        rule = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]}
        rbac.create_namespaced_role(
            sandbox_home, {"metadata": {"name": "team-read"}, "rules": [{**rule, "verbs": ["get", "list"]}]}
        )
        rbac.create_namespaced_role_binding(
            sandbox_home,
            {
                "metadata": {"name": "team-read"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "team-read"},
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": env.agent.service_account,
                        "namespace": env.agent.namespace,
                    }
                ],
            },
        )
        bindings = kubectl("get", "roles,rolebindings", "-n", home, "-o", "name")
        assert bindings.returncode == 0, bindings.stderr
        assert sorted(bindings.stdout.split()) == [
            "role.rbac.authorization.k8s.io/team-read",
            "rolebinding.rbac.authorization.k8s.io/team-read",
        ]
        missing = kubectl("get", "rolebinding", ROLE_NAME, "-n", home)
        assert missing.returncode == 1
        assert "NotFound" in missing.stderr or "not found" in missing.stderr
        # The agent's rights are unchanged: RBAC still grants what the binding says.
        assert kubectl("auth", "can-i", "list", "pods", "-n", home).stdout.strip() == "yes"
    finally:
        gateway.gateway.revoke(env.id)
        provider.teardown(env.id, wait=False)
