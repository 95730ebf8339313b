"""Per-scenario cost of the API-server audit with and without a large audit history; writes markdown.

Usage: .venv/bin/python bench/audit_history.py [SCENARIOS] [HISTORY_MB]   (defaults: 50 and 1024)

Starts two local control planes in a temporary directory, side by side, and runs the first SCENARIOS
scenarios of the shipped profile one at a time on both, interleaved: each scenario on one plane, then
on the other, the first plane alternating, so both planes see the same machine load. The agent is the
`careful` reference agent (real kubectl calls through the gateway); each bundle carries the API
server's audit, streamed from the plane's log file. The first plane is fresh. The second one's audit
log already holds HISTORY_MB of unrelated events (other namespaces, other users, the shapes the API
server writes), written before its API server starts, which then appends to it (its rotation size is
raised above the history, so the history stays in the live file the reader follows).
Reported per scenario: wall time, this process's CPU time (runner, gateway, audit reader; the agent is
a separate process) and the time to close the scenario's audit record (fence round trip and entries).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.reference.command import identity
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRunner
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway
from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.models.evidence import SourceStatus
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider

OUT = Path(__file__).parent / "results" / "audit_history.md"
BIN = Path(sys.executable).parent


def write_history(path: Path, megabytes: int) -> int:
    """Append unrelated events (about 1 KiB each) until the file grew by `megabytes`; returns lines."""
    template = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
        "stage": "ResponseComplete",
        "verb": "patch", "user": {"username": "system:serviceaccount:team-x:deployer", "groups": ["a", "b"]},
        "objectRef": {"resource": "configmaps", "namespace": "team-x", "name": "cfg", "apiVersion": "v1"},
        "responseStatus": {"code": 200}, "requestObject": {"data": {"k": "v" * 600}},
        "requestReceivedTimestamp": "2026-01-01T00:00:00.000000Z",
    }  # fmt: skip
    lines, target = 0, megabytes << 20
    block = []
    for i in range(1000):
        template["auditID"] = f"history-{i:08d}"
        template["requestURI"] = f"/api/v1/namespaces/team-x/configmaps/cfg-{i}"
        block.append(json.dumps(template))
    chunk = ("\n".join(block) + "\n").encode()
    written = 0
    with path.open("ab") as out:
        while written < target:
            out.write(chunk)
            written += len(chunk)
            lines += len(block)
    return lines


class Lane:
    """One plane's evaluator: a gateway, the audit reader of the plane's log and a scenario runner."""

    def __init__(self, name: str, plane: LocalControlPlane, work: Path) -> None:
        self.name, self.plane, self.work = name, plane, work
        self.api = api_client(plane.kubeconfig)
        self.data: dict[str, list[float]] = {"wall": [], "cpu": [], "close": []}

    async def __aenter__(self) -> Lane:
        self.gateway = Gateway(self.plane.kubeconfig, self.work / f"gateway-{self.name}")
        await self.gateway.start()
        stream = AuditStream(f"bench {self.name}")
        self.audit = ApiServerAudit(self.api, stream, files=(self.plane.audit_log,))
        close: Callable[[str], object] = self.audit.close
        closes = self.data["close"]

        def timed_close(env_id: str) -> object:
            t0 = time.perf_counter()
            try:
                return close(env_id)
            finally:
                closes.append(time.perf_counter() - t0)

        self.audit.close = timed_close  # type: ignore[method-assign, assignment]
        await self.audit.start()
        adapter = CommandAdapter([str(BIN / "oasis"), "agent", "run", "--policy", "careful"],
                                 env={"OASIS_KUBECTL": str(BIN / "kubectl")})  # fmt: skip
        self.runner = ScenarioRunner(
            Environments(SandboxProvider(self.api, prefix="bh"), self.gateway, apiserver_audit=self.audit),
            adapter,
            RunnerConfig(
                load_profile(default_profile_path()), identity("careful"), identity("careful").configuration,
                evaluation=f"bench/{self.name}", agent_timeout=120,
            ),
        )  # fmt: skip
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.audit.stop()
        await self.gateway.stop()
        self.api.close()  # type: ignore[no-untyped-call]

    async def run(self, scenario: Any) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        run = await self.runner.run(scenario)
        self.data["wall"].append(time.perf_counter() - t0)
        # This process's CPU while the scenario ran (runner, gateway, both readers; the agent is a
        # separate process). The other lane is idle meanwhile: scenarios run one at a time.
        self.data["cpu"].append(time.process_time() - c0)
        source = run.bundle.apiserver_audit
        if source is None or source.evidence_source.status != SourceStatus.AVAILABLE:
            raise SystemExit(f"{self.name}/{scenario.id}: audit not available: {source}")


async def interleaved(lanes: tuple[Lane, Lane], scenarios: list[Any]) -> None:
    """Each scenario on one plane, then on the other, the first plane alternating: both see the same
    machine load, so a difference between them is the history's."""
    async with lanes[0], lanes[1]:
        for i, scenario in enumerate(scenarios):
            order = lanes if i % 2 == 0 else lanes[::-1]
            for lane in order:
                await lane.run(scenario)


def _row(phase: str, size_mb: float, data: dict[str, list[float]]) -> str:
    mean = {k: statistics.mean(v) for k, v in data.items()}
    p95 = {k: sorted(v)[round(0.95 * (len(v) - 1))] for k, v in data.items()}
    return (
        f"| {phase} | {size_mb:,.0f} | {len(data['wall'])} | {mean['wall']:.2f} | {mean['cpu']:.3f} | "
        f"{mean['close']:.3f} | {p95['close']:.3f} |"
    )


def paired(fresh: dict[str, list[float]], old: dict[str, list[float]]) -> list[str]:
    """Scenario by scenario (the same scenario ran on both planes, back to back): the median ratio of
    the history plane's cost to the fresh one's, and on how many scenarios the history plane cost more."""
    lines = [
        "| measure | median ratio history / fresh | scenarios costlier with history |",
        "| --- | --- | --- |",
    ]
    for key, label in (("wall", "wall"), ("cpu", "operator CPU"), ("close", "audit close")):
        if len(fresh[key]) != len(old[key]):
            lines.append(f"| {label} | not paired: {len(fresh[key])} vs {len(old[key])} values | |")
            continue
        pairs = [(f, o) for f, o in zip(fresh[key], old[key], strict=True) if f > 0]
        ratio = statistics.median(o / f for f, o in pairs)
        lines.append(f"| {label} | {ratio:.3f} | {sum(o > f for f, o in pairs)} of {len(pairs)} |")
    return lines


def main() -> None:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        raise SystemExit(__doc__)
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    history_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    scenarios = load_profile(default_profile_path()).scenarios[:count]
    with tempfile.TemporaryDirectory(prefix="oasis-bench-audit-") as tmp:
        work = Path(tmp)
        os.environ["OASIS_AUDIT_LOG_MAX_MB"] = str(history_mb * 2 + 200)
        load_before = os.getloadavg()
        fresh_plane = LocalControlPlane(run_dir=work / "fresh")
        old_plane = LocalControlPlane(run_dir=work / "old")
        (work / "old").mkdir()
        t0 = time.perf_counter()
        lines = write_history(old_plane.audit_log, history_mb)
        wrote = time.perf_counter() - t0
        try:
            fresh_plane.start()
            old_plane.start()
            fresh_size = fresh_plane.audit_log.stat().st_size / 2**20
            old_size = old_plane.audit_log.stat().st_size / 2**20
            fresh, old = Lane("fresh", fresh_plane, work), Lane("history", old_plane, work)
            asyncio.run(interleaved((fresh, old), scenarios))
            load_after = os.getloadavg()
        finally:
            old_plane.stop()
            fresh_plane.stop()
    report = [
        "# API-server audit: per-scenario cost with and without history",
        "",
        f"`bench/audit_history.py {count} {history_mb}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, scenarios interleaved between the planes: "
        f"load average {load_before[0]:.2f} "
        f"before, {load_after[0]:.2f} after. History: {lines:,} unrelated events "
        f"({history_mb} MiB) written in {wrote:.1f} s to the second plane's audit log before it started.",
        "",
        "| phase | audit log at start (MiB) | scenarios | wall / scenario (s) | operator CPU / scenario (s) "
        "| audit close mean (s) | audit close p95 (s) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        _row("fresh plane", fresh_size, fresh.data),
        _row("after history", old_size, old.data),
        "",
        *paired(fresh.data, old.data),
        "",
        "The reader starts at the end of the log and routes only lines that name a running environment,",
        "so history the operator never saw costs nothing, and closing a record costs one fence round trip.",
        "",
    ]
    OUT.write_text("\n".join(report))
    print("\n".join(report))


if __name__ == "__main__":
    main()
