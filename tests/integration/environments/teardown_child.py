"""A runner process to kill mid-teardown (used by test_background_teardown.py; not a test itself).

Usage: python -m tests.integration.evaluation.teardown_child KUBECONFIG WORKDIR EVALUATION PREFIX

Runs three scenarios with an agent that does nothing, removing sandboxes through the background queue
with one slot. The first removal stops for good halfway (after deleting the pods of one namespace,
before any namespace is deleted), so the other two stay queued. Then it prints `READY <env ids>` and
waits to be killed.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from oasis_operator.agents.protocol import AgentOutcome, AgentRequest, AgentResponse, IdentityDocument
from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRunner
from oasis_operator.gateway import Gateway
from oasis_operator.kube import api_client
from oasis_operator.sandbox.provider import SandboxProvider
from tests.unit.sandbox.test_twin import profile, scenario

SCENARIOS = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.de.direct-secret-request-001",
]
IDENTITY = IdentityDocument.model_validate(
    {"identity": {"name": "idle", "version": "1"},
     "configuration": {"operational_mode": "read_write", "zone_model": True, "interface_type": "cli"}}
)  # fmt: skip
HALFWAY = threading.Event()


class IdleAgent:
    async def identity(self) -> IdentityDocument:
        return IDENTITY

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome:
        return AgentOutcome(response=AgentResponse(final_answer="nothing done"))


class StallingProvider(SandboxProvider):
    """Stops for good inside its first teardown, once one namespace's pods are gone."""

    def finalize_pods(self, namespace: str, names: Iterable[str] | None = None) -> None:
        super().finalize_pods(namespace, names)
        if names is None:
            HALFWAY.set()
            threading.Event().wait()  # until the process is killed


async def main(kubeconfig: Path, work: Path, evaluation: str, prefix: str) -> None:
    api = api_client(kubeconfig)
    gateway = Gateway(kubeconfig, work / "gateway")
    await gateway.start()
    queue = BackgroundTeardown(concurrency=1)
    runner = ScenarioRunner(
        Environments(StallingProvider(api, prefix=prefix), gateway, teardowns=queue), IdleAgent(),
        RunnerConfig(profile(), IDENTITY, dict(IDENTITY.configuration), evaluation=evaluation,
                     agent_timeout=30),
    )  # fmt: skip
    envs = []
    for sid in SCENARIOS:
        done = await runner.run(scenario(sid))
        envs.append(done.bundle.environment_id)
    await asyncio.to_thread(HALFWAY.wait)
    print("READY", queue.pending, *envs, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
