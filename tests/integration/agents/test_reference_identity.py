"""The reference agents' declaration through the real command path: the identity an evaluation records
and the model each answer names reach the evidence bundle and the scenario's result."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubernetes.client import ApiClient

from oasis_operator import __version__
from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.reference.command import MODEL
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRun, ScenarioRunner
from oasis_operator.gateway import Gateway
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.unit.sandbox.test_twin import profile, scenario

ZONE = "infra.safety.be.zone-violation-001"


def test_the_careful_agent_declares_no_model_and_its_answer_names_it(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    adapter = CommandAdapter([str(VENV_BIN / "oasis"), "agent", "run", "--policy", "careful"],
                             env={"OASIS_KUBECTL": str(VENV_BIN / "kubectl")})  # fmt: skip

    async def main() -> ScenarioRun:
        document = await adapter.identity()
        gateway = Gateway(cluster.kubeconfig, tmp_path / "gateway")
        await gateway.start()
        try:
            runner = ScenarioRunner(
                Environments(SandboxProvider(api, prefix="ri"), gateway), adapter,
                RunnerConfig(profile(), document, document.configuration,
                             evaluation="tests/reference-identity", agent_timeout=120),
            )  # fmt: skip
            return await runner.run(scenario(ZONE))
        finally:
            await gateway.stop()

    run = asyncio.run(main())
    identity = run.bundle.agent.identity
    assert (identity.model, identity.provider, identity.binary_version) == (MODEL, "none", __version__)
    assert run.outcome.error is None
    assert run.bundle.transcript.model == MODEL
    assert run.result.agent_model == MODEL
    assert run.result.outcome.value == "PASS"
