"""Run whole scenarios (sandbox → gateway → agent → evidence → engine) for an agent policy, in process.

The policy runs in this process with the credentials the gateway issued, so the evidence is the real
gateway record, API-server-free (the record is the audit source) and the real before/after snapshots.
Used by the capability tests and by `python -m tests.integration.agents.capability_support` to record
bundles of a policy over chosen scenarios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path

from kubernetes.client import ApiClient

from oasis_operator.agents.protocol import AgentOutcome, AgentRequest, AgentResponse, IdentityDocument
from oasis_operator.agents.reference.command import identity
from oasis_operator.agents.reference.kubectl import Kubectl
from oasis_operator.agents.reference.registry import policy_class
from oasis_operator.engine.aggregate import capability_scores
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRun, ScenarioRunner
from oasis_operator.gateway import Gateway
from oasis_operator.kube import api_client
from oasis_operator.models.crd import MutationSpec
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider
from tests.agents.wordy import AGENTS

Act = Callable[[AgentRequest, Kubectl], AgentResponse]
VENV_KUBECTL = str(Path(sys.executable).parent / "kubectl")


class InProcessAdapter:
    """An agent adapter that runs a policy function in a thread with the request's kubeconfig."""

    def __init__(self, act: Act, name: str) -> None:
        self.act, self.name = act, name

    async def identity(self) -> IdentityDocument:
        return identity("careful").model_copy(
            update={"identity": identity("careful").identity.model_copy(update={"name": self.name})}
        )

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome:
        begun = time.monotonic()

        def work() -> AgentResponse:
            assert request.environment is not None
            with Kubectl(request.environment.kubeconfig, binary=VENV_KUBECTL) as kc:
                return self.act(request, kc)

        response = await asyncio.wait_for(asyncio.to_thread(work), time_limit)
        return AgentOutcome(response=response, seconds=time.monotonic() - begun)


def run_scenarios(
    kubeconfig: Path,
    api: ApiClient,
    data_dir: Path,
    act: Act,
    name: str,
    scenarios: list[Scenario],
    parallel: int = 2,
    mutation: MutationSpec | None = None,
) -> dict[str, ScenarioRun]:
    """Each scenario once, `parallel` at a time (on name-mutated twins with `mutation`); keyed by id."""
    profile = load_profile(default_profile_path())

    async def main() -> dict[str, ScenarioRun]:
        gateway = Gateway(kubeconfig, data_dir / f"gateway-{name}")
        await gateway.start()
        limit = asyncio.Semaphore(parallel)
        doc = identity("careful")
        runner = ScenarioRunner(
            Environments(SandboxProvider(api, prefix="cap"), gateway),
            InProcessAdapter(act, name),
            RunnerConfig(
                profile,
                doc,
                doc.configuration,
                evaluation=f"tests/{name}",
                agent_timeout=300,
                mutation=mutation,
            ),
        )

        async def one(s: Scenario) -> tuple[str, ScenarioRun]:
            async with limit:
                return s.id, await runner.run(s)

        try:
            return dict(await asyncio.gather(*(one(s) for s in scenarios)))
        finally:
            await gateway.stop()

    return asyncio.run(main())


def dimensions(runs: dict[str, ScenarioRun]) -> dict[str, float]:
    """Core dimension scores of the capability results among `runs`."""
    profile = load_profile(default_profile_path())
    results = [r.result for r in runs.values() if r.result.classification == "capability"]
    return capability_scores(results, profile)[1]


def _main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("policy")
    parser.add_argument("ids", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--seed", type=int, default=None, help="run on twins with names mutated by SEED")
    args = parser.parse_args()
    profile = load_profile(default_profile_path())
    chosen = [s for s in profile.scenarios if any(fnmatch(s.id, p) for p in args.ids)]
    kubeconfig = Path(os.environ["KUBECONFIG"])
    api = api_client(kubeconfig)
    act = AGENTS[args.policy] if args.policy in AGENTS else policy_class(args.policy)().act
    mutation = MutationSpec(seed=args.seed) if args.seed is not None else None
    runs = run_scenarios(kubeconfig, api, args.out, act, args.policy, chosen, args.parallel, mutation)
    args.out.mkdir(parents=True, exist_ok=True)
    for sid, run in sorted(runs.items()):
        (args.out / f"{sid}.json").write_text(run.bundle.model_dump_json(indent=1))
        r = run.result
        print(f"{sid}: {r.outcome.value} score={r.score} {r.summary}")
        for c in r.checks:
            if not c.passed:
                print(f"    FAIL {c.block}[{c.index}] {c.subject}: {c.detail}")
    print(json.dumps({sid: r.result.score for sid, r in runs.items()}))
    print("dimensions", json.dumps(dimensions(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
