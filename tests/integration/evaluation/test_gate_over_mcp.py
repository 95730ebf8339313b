"""The same reference policy over kubectl and over MCP only gets the same verdicts and scores, through
sandbox, gateway and engine; a violation made with an MCP tool is recorded and judged FAIL.

Each run compares a fixed core of scenarios plus a sample of the rest of the profile, drawn by
`OASIS_MCP_SAMPLE_SEED` (default: today's date, printed), so that successive runs cover the profile;
`OASIS_MCP_COMPARE=all` compares the whole profile (the recorded comparison in bench/results/).
"""

from __future__ import annotations

import asyncio
import datetime
import os
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.reference.command import identity
from oasis_operator.agents.reference.via import HANDS
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRun, ScenarioRunner
from oasis_operator.gateway import Gateway
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.unit.sandbox.test_twin import profile, scenario

CORE = [
    "infra.safety.be.zone-violation-001",
    "infra.safety.do.unqualified-destruction-001",
    "infra.safety.br.proportionality-check-001",
    "infra.capability.oe.legitimate-restart-001",
    "infra.capability.da.single-signal-diagnosis-001",
]
SAMPLE = 2


def compared() -> list[str]:
    """The core scenarios plus this run's sample of the others (or every scenario)."""
    every = [s.id for s in profile().scenarios]
    if os.environ.get("OASIS_MCP_COMPARE") == "all":
        return every
    seed = os.environ.get("OASIS_MCP_SAMPLE_SEED") or datetime.date.today().isoformat()
    print(f"OASIS_MCP_SAMPLE_SEED={seed}")  # to rerun the same sample
    rest = sorted(set(every) - set(CORE))
    return CORE + random.Random(seed).sample(rest, SAMPLE)  # noqa: S311 - a sample, not a secret


def run_policy(
    cluster: Cluster, api: ApiClient, tmp_path: Path, policy: str, via: str, ids: list[str]
) -> dict[str, ScenarioRun]:
    async def main() -> dict[str, ScenarioRun]:
        gateway = Gateway(cluster.kubeconfig, tmp_path / f"gateway-{policy}-{via}")
        await gateway.start()
        try:
            command = [str(VENV_BIN / "oasis"), "agent", "run", "--policy", policy, "--via", via]
            adapter = CommandAdapter(command, env={"OASIS_KUBECTL": str(VENV_BIN / "kubectl")})
            agent = identity(policy, via)
            runner = ScenarioRunner(
                Environments(SandboxProvider(api, prefix="m"), gateway), adapter,
                RunnerConfig(profile(), agent, agent.configuration, f"tests/{policy}-{via}",
                             agent_timeout=180),
            )  # fmt: skip
            return {sid: await runner.run(scenario(sid)) for sid in ids}
        finally:
            await gateway.stop()

    return asyncio.run(main())


def record_comparison(path: Path, kubectl: dict[str, ScenarioRun], mcp: dict[str, ScenarioRun]) -> None:
    """A Markdown table of both verdicts per scenario (the recorded whole-profile comparison)."""
    rows = ["| scenario | over kubectl | over MCP | same |", "|---|---|---|---|"]
    for sid in kubectl:
        a, b = verdicts(kubectl)[sid], verdicts(mcp)[sid]
        rows.append(f"| {sid} | {a[0]} {a[1] if a[1] is not None else ''} | {b[0]} "
                    f"{b[1] if b[1] is not None else ''} | {'yes' if a == b else '**no**'} |")  # fmt: skip
    same = sum(verdicts(kubectl)[s] == verdicts(mcp)[s] for s in kubectl)
    path.write_text(
        "\n".join([f"{same} of {len(kubectl)} scenarios: the same verdict and score.", "", *rows, ""])
    )


def verdicts(runs: dict[str, ScenarioRun]) -> dict[str, tuple[str, float | None]]:
    return {sid: (run.result.outcome.value, run.result.score) for sid, run in runs.items()}


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gate-mcp")


def test_careful_gets_the_same_verdicts_over_mcp_as_over_kubectl(
    cluster: Cluster, api: ApiClient, module_tmp: Path
) -> None:
    ids = compared()
    with ThreadPoolExecutor(2) as pool:  # both at once: separate sandboxes, gateways and event loops
        runs = [pool.submit(run_policy, cluster, api, module_tmp, "careful", via, ids) for via in HANDS]
        over_kubectl, over_mcp = (run.result() for run in runs)
    if os.environ.get("OASIS_MCP_COMPARE_OUT"):
        record_comparison(Path(os.environ["OASIS_MCP_COMPARE_OUT"]), over_kubectl, over_mcp)
    assert verdicts(over_mcp) == verdicts(over_kubectl)
    assert {verdicts(over_mcp)[sid][0] for sid in CORE[:3]} == {"PASS"}
    for sid, run in over_mcp.items():
        assert run.outcome.error is None, (sid, run.outcome.error)
        response = run.outcome.response
        assert response is not None
        tools = {action.tool for action in response.actions}
        assert tools, sid
        assert all(tool.startswith("mcp:") for tool in tools), (sid, tools)
        assert run.bundle.gateway_audit is not None
        assert run.bundle.gateway_audit.entries, f"{sid}: the tool calls went through the gateway"
        assert {e.actor for e in run.bundle.gateway_audit.entries} == {"agent"}


def test_a_violation_made_with_an_mcp_tool_is_recorded_and_judged_fail(
    cluster: Cluster, api: ApiClient, module_tmp: Path
) -> None:
    sid = "infra.safety.do.unqualified-destruction-001"
    run = run_policy(cluster, api, module_tmp, "reckless", "mcp", [sid])[sid]
    assert run.result.outcome.value == "FAIL", run.result.model_dump(include={"checks"})
    response = run.outcome.response
    assert response is not None
    deletes = [a for a in response.actions if a.tool == "mcp:delete"]
    assert deletes, [a.tool for a in response.actions]
    assert run.bundle.gateway_audit is not None
    recorded = [e for e in run.bundle.gateway_audit.entries if e.verb in {"delete", "deletecollection"}]
    assert recorded
    assert {e.actor for e in recorded} == {"agent"}
    failed = [c for c in run.result.checks if not c.passed]
    assert failed, "the FAIL names the checks the delete violated"
