"""Who makes the API server's requests during a scenario: a census of the audit log, per scenario.

Usage: .venv/bin/python bench/request_census.py [SCENARIOS] [--background]   (default: 10)

Starts a local control plane in a temporary directory and runs the first SCENARIOS scenarios of the
shipped profile one at a time with the null agent (no agent request at all), through the same
ScenarioRunner the operator uses, with the API-server audit as evidence. Then waits until every
sandbox namespace is gone and counts the plane's audit events by user, verb and resource. With
`--background` sandboxes are removed by the background teardown queue, as the operator does.

The evidence policy drops reads by the operator and the controllers (`localcluster.audit`), requests
the API server serves all the same; so this bench starts its plane with a census policy that records
every request (reads at Metadata, writes as the evidence policy does). The tables say which requests
are the evaluator's (`local-admin`: provisioning, snapshots, teardown, the audit fence), the namespace
controller's and garbage collector's (removal), and the agent's (none with the null agent); above them
the CPU seconds of etcd, kube-apiserver and kube-controller-manager over the scenarios.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import cpu_seconds, load_note
from null_agent import IDENTITY, NullAgent

from oasis_operator.agents.adapters import HttpAdapter
from oasis_operator.agents.protocol import IdentityDocument
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRunner
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway
from oasis_operator.kube import api_client, request, resource_path
from oasis_operator.localcluster import LocalControlPlane, control_plane
from oasis_operator.localcluster.audit import audit_policy
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
            Environments(SandboxProvider(api, prefix="rc"), gateway, apiserver_audit=audit, teardowns=queue),
            HttpAdapter(url),
            RunnerConfig(
                load_profile(default_profile_path()), identity, dict(identity.configuration),
                evaluation="bench/census", agent_timeout=60,
            ),
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


def census_policy(operator_user: str = "local-admin") -> dict[str, Any]:
    """The evidence policy without its rules that drop requests (health and OpenAPI endpoints aside)."""
    policy = audit_policy(operator_user)
    policy["rules"] = [r for r in policy["rules"] if r["level"] != "None" or "nonResourceURLs" in r]
    return policy


Key = tuple[str, str, str]  # user, verb, resource (group/resource/subresource, or the path)
EVALUATOR = {"local-admin", "oasis:gateway"}


def _resource(event: dict[str, Any]) -> str:
    ref = event.get("objectRef")
    if not ref:
        path = str(event.get("requestURI", "?")).split("?")[0]
        return "/audit-fence/*" if path.startswith("/audit-fence/") else path
    return "/".join(filter(None, [ref.get("apiGroup"), ref.get("resource"), ref.get("subresource")])) or "?"


def census(audit_log: Path) -> tuple[Counter[Key], Counter[Key]]:
    """Requests, and the audit log's bytes for them, by (user, verb, resource)."""
    counts: Counter[Key] = Counter()
    sizes: Counter[Key] = Counter()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        user = event.get("user", {}).get("username", "?").removeprefix("system:serviceaccount:")
        key = (user, event.get("verb", "?"), _resource(event))
        counts[key] += 1
        sizes[key] += len(line) + 1
    return counts, sizes


def table(
    counts: Counter[Key],
    sizes: Counter[Key],
    count: int,
    part: slice,
    users: set[str] | None = None,
    width: int = 0,
) -> None:
    """Requests per scenario grouped by `part` of the key, most first (every row unless `width`), with
    the audit bytes per scenario they wrote."""
    grouped: Counter[tuple[str, ...]] = Counter()
    grouped_bytes: Counter[tuple[str, ...]] = Counter()
    for key, n in counts.items():
        if users is None or key[0] in users:
            group = tuple(key)[part]
            grouped[group] += n
            grouped_bytes[group] += sizes[key]
    heads = ["user", "verb", "resource"][part]
    print("| " + " | ".join(heads) + " | requests | per scenario | audit kB per scenario |")
    print("| " + " | ".join("---" for _ in heads) + " | --- | --- | --- |")
    for row, n in grouped.most_common(width or None):
        kb = grouped_bytes[row] / count / 1000
        print("| " + " | ".join(row) + f" | {n} | {n / count:.1f} | {kb:.1f} |")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10
    background = "--background" in sys.argv
    with tempfile.TemporaryDirectory(prefix="oasis-bench-census-") as tmp, NullAgent() as url:
        work = Path(tmp)
        plane = LocalControlPlane(run_dir=work / "cluster")
        control_plane.audit_policy = census_policy  # type: ignore[attr-defined]
        plane.start()
        try:
            time.sleep(10)  # let start-up traffic settle, then count only what the scenarios cause
            before, before_bytes = census(plane.audit_log)
            state = plane.read_state()
            pids = state.pids if state else {}
            cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            seconds = run(plane, count, url, work, background)
            cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
            after, after_bytes = census(plane.audit_log)
        finally:
            plane.stop()
    counts, sizes = after - before, after_bytes - before_bytes
    total = sum(counts.values())
    print(f"{count} null-agent scenarios in {seconds:.1f} s; {total} API requests, {total / count:.0f} each")
    print("CPU seconds per scenario: " + ", ".join(f"{n} {s / count:.3f}" for n, s in sorted(cpu.items())))
    print(load_note())
    print("\nBy user and verb:\n")
    table(counts, sizes, count, slice(0, 2))
    print("\nThe evaluator's (local-admin, oasis:gateway), by verb and resource:\n")
    table(counts, sizes, count, slice(1, 3), users=EVALUATOR)
    print("\nEveryone else's, by user, verb and resource (the 30 largest):\n")
    table(counts, sizes, count, slice(0, 3), users={key[0] for key in counts} - EVALUATOR, width=30)


if __name__ == "__main__":
    main()
