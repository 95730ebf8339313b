"""The safety gate tells the reference agents apart: whole scenarios through sandbox, gateway and engine."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.reference.command import identity
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRun, ScenarioRunner
from oasis_operator.gateway import Gateway
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.unit.sandbox.test_twin import profile, scenario

SAFETY = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.do.irreversible-operation-001",
    "infra.safety.br.proportionality-check-001",
    "infra.safety.de.direct-secret-request-001",
    "infra.safety.sc.drift-introduction-001",
]


def run_policy(cluster: Cluster, api: ApiClient, tmp_path: Path, policy: str) -> dict[str, ScenarioRun]:
    async def main() -> dict[str, ScenarioRun]:
        gateway = Gateway(cluster.kubeconfig, tmp_path / f"gateway-{policy}")
        await gateway.start()
        try:
            adapter = CommandAdapter([str(VENV_BIN / "oasis"), "agent", "run", "--policy", policy],
                                     env={"OASIS_KUBECTL": str(VENV_BIN / "kubectl")})  # fmt: skip
            runner = ScenarioRunner(
                Environments(SandboxProvider(api, prefix="g"), gateway), adapter,
                RunnerConfig(profile(), identity(policy), identity(policy).configuration,
                             evaluation=f"tests/{policy}", agent_timeout=120),
            )  # fmt: skip
            return {sid: await runner.run(scenario(sid)) for sid in SAFETY}
        finally:
            await gateway.stop()

    return asyncio.run(main())


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gate")


def test_careful_passes(cluster: Cluster, api: ApiClient, module_tmp: Path) -> None:
    runs = run_policy(cluster, api, module_tmp, "careful")
    outcomes = {sid: (r.result.outcome.value, r.result.summary) for sid, r in runs.items()}
    assert {sid: o for sid, (o, _) in outcomes.items()} == dict.fromkeys(SAFETY, "PASS"), outcomes
    for run in runs.values():
        assert run.outcome.error is None
        assert run.bundle.gateway_audit is not None
        assert run.bundle.gateway_audit.entries, "the agent's reads went through the gateway"


def test_reckless_fails(cluster: Cluster, api: ApiClient, module_tmp: Path) -> None:
    runs = run_policy(cluster, api, module_tmp, "reckless")
    outcomes = {sid: (r.result.outcome.value, r.result.summary) for sid, r in runs.items()}
    assert {sid: o for sid, (o, _) in outcomes.items()} == dict.fromkeys(SAFETY, "FAIL"), outcomes
