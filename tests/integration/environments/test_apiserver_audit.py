"""The sandbox API server's audit, streamed from the real local plane's log file into scenario bundles.

The fence passes the real policy, the agent's writes come back with bodies and the returned object,
every identity is attributed, and a ServiceAccount token used in the sandbox is a foreign credential.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, Configuration, CoreV1Api
from kubernetes.client.exceptions import ApiException

from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.reference.command import identity
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRun, ScenarioRunner
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway
from oasis_operator.models.evidence import Actor, SourceStatus
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.unit.sandbox.test_twin import profile, scenario

SCENARIO = "infra.safety.sc.drift-introduction-001"


@pytest.fixture
def audit(cluster: Cluster, api: ApiClient) -> ApiServerAudit:
    if cluster.audit_log is None:
        pytest.skip("reused cluster without OASIS_TEST_AUDIT_LOG")
    return ApiServerAudit(api, AuditStream("local plane"), files=(cluster.audit_log,))


def _run(cluster: Cluster, api: ApiClient, audit: ApiServerAudit, tmp_path: Path) -> ScenarioRun:
    async def main() -> ScenarioRun:
        gateway = Gateway(cluster.kubeconfig, tmp_path / "gateway")
        await gateway.start()
        await audit.start()
        try:
            adapter = CommandAdapter([str(VENV_BIN / "oasis"), "agent", "run", "--policy", "reckless"],
                                     env={"OASIS_KUBECTL": str(VENV_BIN / "kubectl")})  # fmt: skip
            runner = ScenarioRunner(
                Environments(SandboxProvider(api, prefix="au"), gateway, apiserver_audit=audit), adapter,
                RunnerConfig(profile(), identity("reckless"), identity("reckless").configuration,
                             evaluation="tests/audit", agent_timeout=120),
            )  # fmt: skip
            return await runner.run(scenario(SCENARIO))
        finally:
            await audit.stop()
            await gateway.stop()

    return asyncio.run(main())


def test_scenario_bundle_carries_the_api_servers_audit(
    cluster: Cluster, api: ApiClient, audit: ApiServerAudit, tmp_path: Path
) -> None:
    run = _run(cluster, api, audit, tmp_path)
    log = run.bundle.apiserver_audit
    assert log is not None
    assert log.evidence_source.status == SourceStatus.AVAILABLE, log.evidence_source.detail
    assert audit.stream.provider_users == {"local-admin"}  # learned from the first fence
    agent = [e for e in log.entries if e.actor == Actor.AGENT]
    assert agent, "the agent's requests through the gateway are in the API server's audit"
    assert {e.user for e in agent} == {run.bundle.agent.kube_user}
    writes = [e for e in agent if e.verb in {"patch", "update", "create", "delete"}]
    assert writes, "; ".join(f"{e.verb} {e.path} {e.response_code}" for e in agent)
    assert all(e.request_body is not None for e in writes if e.verb != "delete")
    landed = [e for e in writes if e.succeeded and e.verb in {"patch", "update", "create"}]
    assert landed, "; ".join(f"{e.verb} {e.path} {e.response_code}" for e in writes)
    for entry in landed:
        assert entry.response_uid
        assert entry.response_resource_version
        assert entry.response_body is not None
    # Sandbox names are the agent's: no entry of the agent shows a sandbox name.
    assert all(f"-{run.bundle.environment_id}" not in e.path for e in agent)
    assert all(e.namespace is None or run.bundle.environment_id not in e.namespace for e in agent)
    # The gateway's record and the API server's audit agree on what the agent wrote.
    gateway = run.bundle.gateway_audit
    assert gateway is not None
    forwarded = {
        (e.verb, e.namespace, e.name) for e in gateway.entries if e.response_code and e.verb == "patch"
    }
    assert forwarded <= {(e.verb, e.namespace, e.name) for e in agent}


def test_a_token_used_in_the_sandbox_is_a_foreign_credential(
    cluster: Cluster, api: ApiClient, audit: ApiServerAudit, tmp_path: Path
) -> None:
    provider = SandboxProvider(api, prefix="au")
    record = provider.provision(scenario(SCENARIO), "tests/audit")
    env = record.environment
    core = CoreV1Api(api)
    sandbox = env.namespaces[0].sandbox
    try:
        # The token a pod of the namespace gets mounted (TokenRequest; no token Secret exists since 1.24),
        # as an agent that found it would hold it.
        minted = core.create_namespaced_service_account_token(
            "default", sandbox, {"spec": {"expirationSeconds": 3600}}
        )
        stolen = minted.status.token
        asyncio.run(audit.start())
        since = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        audit.subscribe(env, since)
        admin = api.configuration
        config = Configuration(host=admin.host, api_key={"authorization": f"Bearer {stolen}"})
        config.ssl_ca_cert = admin.ssl_ca_cert
        foreign = ApiClient(config)
        try:
            # Refused by RBAC: the attempt, not its success, is what the audit must show.
            with pytest.raises(ApiException) as refused:
                CoreV1Api(foreign).list_namespaced_secret(sandbox)
            assert refused.value.status == 403
        finally:
            foreign.close()
        log = audit.close(env.id)
    finally:
        asyncio.run(audit.stop())
        provider.teardown(env.id, False)
    assert log.evidence_source.status == SourceStatus.AVAILABLE, log.evidence_source.detail
    found = [e for e in log.entries if e.actor == Actor.FOREIGN]
    assert [(e.user, e.verb, e.resource, e.namespace) for e in found] == [
        (f"system:serviceaccount:{sandbox}:default", "list", "secrets", env.namespaces[0].declared)
    ]
