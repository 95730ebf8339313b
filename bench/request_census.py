"""Who makes the API server's requests during a scenario: a census of the audit log, per scenario.

Usage: .venv/bin/python bench/request_census.py [SCENARIOS] [--background]   (default: 10)

Starts a local control plane in a temporary directory and runs the first SCENARIOS scenarios of the
shipped profile one at a time with the null agent (no agent request at all), through the same
ScenarioRunner the operator uses, with the API-server audit as evidence. Then waits until every
sandbox namespace is gone and counts the plane's audit events by user and verb. With `--background`
sandboxes are removed by the background teardown queue, as the operator does. What the API server
spends its CPU on follows from these counts; the table says which requests are the evaluator's
(`kubernetes-admin`: provisioning, snapshots, teardown, the audit fence), the namespace controller's and
garbage collector's (removal), and the agent's (none with the null agent).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from null_agent import IDENTITY, NullAgent

from oasis_operator.agents.adapters import HttpAdapter
from oasis_operator.agents.protocol import IdentityDocument
from oasis_operator.evaluation.apiserver_audit import ApiServerAudit
from oasis_operator.evaluation.background_teardown import BackgroundTeardown
from oasis_operator.evaluation.scenario_run import ScenarioRunner
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway
from oasis_operator.kube import api_client, request, resource_path
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider


def run(plane: LocalControlPlane, count: int, url: str, work: Path, background: bool) -> float:
    api = api_client(plane.kubeconfig)
    scenarios = load_profile(default_profile_path()).scenarios[:count]
    identity = IdentityDocument.model_validate(IDENTITY)

    async def main() -> float:
        gateway = Gateway(plane.kubeconfig, work / "gateway")
        await gateway.start()
        audit = ApiServerAudit(api, AuditStream("census"), files=(plane.audit_log,))
        await audit.start()
        queue = BackgroundTeardown() if background else None
        runner = ScenarioRunner(
            SandboxProvider(api, prefix="rc"), gateway, HttpAdapter(url),
            load_profile(default_profile_path()), identity, dict(identity.configuration),
            evaluation="bench/census", agent_timeout=60,
            apiserver_audit=audit, teardowns=queue,
        )  # fmt: skip
        t0 = time.perf_counter()
        try:
            for scenario in scenarios:
                await runner.run(scenario)
            if queue is not None:
                await queue.drain()
        finally:
            await audit.stop()
            await gateway.stop()
        return time.perf_counter() - t0

    seconds = asyncio.run(main())
    deadline = time.monotonic() + 300
    query = {"labelSelector": ENV_LABEL}
    while request(api, "GET", resource_path("Namespace"), query=query)["items"]:
        if time.monotonic() > deadline:
            raise SystemExit("sandbox namespaces still there after 300 s")
        time.sleep(1)
    time.sleep(5)  # the garbage collector's last requests
    api.close()  # type: ignore[no-untyped-call]
    return seconds


def census(audit_log: Path) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        user = event.get("user", {}).get("username", "?")
        counts[(user.removeprefix("system:serviceaccount:"), event.get("verb", "?"))] += 1
    return counts


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10
    background = "--background" in sys.argv
    with tempfile.TemporaryDirectory(prefix="oasis-bench-census-") as tmp, NullAgent() as url:
        work = Path(tmp)
        plane = LocalControlPlane(run_dir=work / "cluster")
        plane.start()
        try:
            time.sleep(10)  # let start-up traffic settle, then count only what the scenarios cause
            before = census(plane.audit_log)
            seconds = run(plane, count, url, work, background)
            after = census(plane.audit_log)
        finally:
            plane.stop()
    counts = after - before
    total = sum(counts.values())
    print(f"{count} null-agent scenarios in {seconds:.1f} s; {total} API requests, {total / count:.0f} each")
    print("| user | verb | requests | per scenario |\n| --- | --- | --- | --- |")
    for (user, verb), n in counts.most_common(25):
        print(f"| {user} | {verb} | {n} | {n / count:.1f} |")


if __name__ == "__main__":
    main()
