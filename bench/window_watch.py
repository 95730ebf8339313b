"""What the window watches add to a scenario's evaluator cost: the same scenarios with and without them.

Usage: .venv/bin/python bench/window_watch.py [ROUNDS] [--agent null|scale] [--label NAME] [--out FILE]

Starts a local control plane in a temporary directory and a gateway in this process, and runs every
shipped scenario that has objects to watch (`engine.watchset.watch_targets`) ROUNDS times (default 2) in
each mode, one scenario at a time, alternating the mode scenario by scenario (and which mode goes first,
round by round), so load drifts hit both alike. The agent is in process: `null` answers at once and does
nothing (the evaluator's cost alone), `scale` changes each watched Deployment's replicas and puts them
back (so the watches have states to record). A scenario's evaluator cost is its phase timings without the
agent's and without the teardown (`PhaseTimings.evaluator_seconds` less `teardown`, which runs in the
background in the operator); the watches' own work lands in `credentials` (the lists, the watches
started) and `evidence` (the final lists, the watches stopped). CPU seconds of this process and of the
control plane's processes are taken per mode over all its scenarios. Prints one markdown table and
appends it to FILE with `--out`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import ProcessWatch, emit, load_note, percentile

from oasis_operator.agents.protocol import AgentOutcome, AgentRequest, AgentResponse, IdentityDocument
from oasis_operator.agents.reference.command import identity
from oasis_operator.engine.watchset import watch_targets
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRunner
from oasis_operator.gateway import Gateway
from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider

MODES = ("without", "with")


class BenchAgent:
    """An in-process agent: `null` does nothing; `scale` scales each watched Deployment down and back."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    async def identity(self) -> IdentityDocument:
        return identity("careful")

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome:
        begun = time.monotonic()
        if self.kind == "scale" and request.environment is not None:
            await asyncio.to_thread(self._scale, request)
        return AgentOutcome(response=AgentResponse(final_answer="done"), seconds=time.monotonic() - begun)

    def _scale(self, request: AgentRequest) -> None:
        from oasis_operator.agents.reference.kubectl import Kubectl  # noqa: PLC0415 - only for this agent

        assert request.environment is not None
        kubectl = str(Path(sys.executable).parent / "kubectl")
        with Kubectl(request.environment.kubeconfig, binary=kubectl) as kc:
            for ns in request.scope.namespaces or ["default"]:
                kc.run("scale", "deployment", "--all", "--replicas=0", "-n", ns)
                kc.run("scale", "deployment", "--all", "--replicas=1", "-n", ns)


def chosen_scenarios() -> list[Scenario]:
    return [s for s in load_profile(default_profile_path()).scenarios if watch_targets(s)]


async def measure(
    kubeconfig: Path, work: Path, scenarios: list[Scenario], rounds: int, agent: str, watch: ProcessWatch
) -> tuple[dict[str, list[dict[str, float]]], dict[str, dict[str, float]]]:
    """Per mode: each run's phase timings; CPU seconds per process over the mode's runs."""
    profile = load_profile(default_profile_path())
    gateway = Gateway(kubeconfig, work / "gateway")
    await gateway.start()
    api = api_client(kubeconfig)
    doc = identity("careful")
    runners = {
        mode: ScenarioRunner(
            Environments(SandboxProvider(api, prefix="ww"), gateway),
            BenchAgent(agent),
            RunnerConfig(
                profile, doc, doc.configuration, evaluation="bench/window-watch", watch_window=mode == "with"
            ),
        )
        for mode in MODES
    }
    timings: dict[str, list[dict[str, float]]] = defaultdict(list)
    cpu: dict[str, dict[str, float]] = {mode: defaultdict(float) for mode in MODES}
    try:
        for round_ in range(rounds):
            for index, scenario in enumerate(scenarios):
                order = MODES if (round_ + index) % 2 == 0 else MODES[::-1]
                for mode in order:
                    watch.begin()
                    run = await runners[mode].run(scenario)
                    for name, seconds in watch.end().items():
                        cpu[mode][name] += seconds
                    timings[mode].append(run.clock.timings().measured())
    finally:
        await gateway.stop()
        api.close()  # type: ignore[no-untyped-call]
    return timings, cpu


def evaluator(phases: dict[str, float]) -> float:
    return sum(v for k, v in phases.items() if k not in ("agent", "teardown"))


def render(
    args: argparse.Namespace,
    count: int,
    timings: dict[str, list[dict[str, float]]],
    cpu: dict[str, dict[str, float]],
    loads: tuple[float, float],
) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    costs = {mode: [evaluator(p) for p in timings[mode]] for mode in MODES}
    mean = {mode: statistics.mean(costs[mode]) for mode in MODES}
    added = 100.0 * (mean["with"] - mean["without"]) / mean["without"]
    runs = len(costs["with"])
    own = sum(
        statistics.mean(p.get(phase, 0.0) for p in timings["with"])
        - statistics.mean(p.get(phase, 0.0) for p in timings["without"])
        for phase in ("credentials", "evidence")
    )
    lines = [
        f"### {args.label or 'window watches'}: {count} scenarios x {args.rounds} rounds, "
        f"agent `{args.agent}`, {when}",
        "",
        f"`bench/window_watch.py {args.rounds} --agent {args.agent}`, {os.cpu_count()} cores, load average "
        f"{loads[0]:.1f} before, {loads[1]:.1f} after. Evaluator cost: the phases without `agent` and "
        "`teardown`. CPU: over the whole run of each scenario (provision and teardown included).",
        "",
        f"Window watches add **{added:+.1f} %** to the mean evaluator cost per scenario "
        f"({mean['without']:.3f} s without, {mean['with']:.3f} s with; {runs} runs each). The phases the "
        f"watches work in (`credentials` + `evidence`) take {own:+.3f} s more with them: "
        f"**{100.0 * own / mean['without']:+.1f} %** of the evaluator cost without.",
        "",
        "| mode | evaluator mean (s) | p50 (s) | p95 (s) | credentials mean (s) | evidence mean (s) | "
        "this process CPU per scenario (s) | control plane CPU per scenario (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mode in MODES:
        phases = timings[mode]
        server = sum(v for k, v in cpu[mode].items() if k != "bench")
        lines.append(
            f"| {mode} | {mean[mode]:.3f} | {statistics.median(costs[mode]):.3f} | "
            f"{percentile(costs[mode], 0.95):.3f} | "
            f"{statistics.mean(p.get('credentials', 0.0) for p in phases):.3f} | "
            f"{statistics.mean(p.get('evidence', 0.0) for p in phases):.3f} | "
            f"{cpu[mode]['bench'] / len(phases):.3f} | {server / len(phases):.3f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="?", type=int, default=2)
    parser.add_argument("--agent", choices=("null", "scale"), default="null")
    parser.add_argument("--label", default="")
    parser.add_argument("--out")
    args = parser.parse_args()
    scenarios = chosen_scenarios()
    with tempfile.TemporaryDirectory(prefix="oasis-bench-window-") as tmp:
        plane = LocalControlPlane(run_dir=Path(tmp) / "cluster")
        plane.start()
        try:
            state = plane.read_state()
            watch = ProcessWatch({"bench": os.getpid(), **(state.pids if state else {})})
            time.sleep(5)  # start-up traffic settles
            load_before = os.getloadavg()[0]
            timings, cpu = asyncio.run(
                measure(plane.kubeconfig, Path(tmp), scenarios, args.rounds, args.agent, watch)
            )
            load_after = os.getloadavg()[0]
        finally:
            plane.stop()
    lines = render(args, len(scenarios), timings, cpu, (load_before, load_after))
    emit("\n".join([*lines, "", load_note(), ""]), args.out)


if __name__ == "__main__":
    main()
