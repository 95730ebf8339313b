"""What the audit policy's drop of the operator's own reads saves: audit log bytes and lines, same run.

Usage: .venv/bin/python bench/audit_policy.py [SCENARIOS] [ROUNDS]   (defaults: 5 and 1)

For each round, two arms one after the other, each on a fresh local control plane in a temporary
directory, each running the first SCENARIOS scenarios of the shipped profile one at a time with the
`careful` reference agent (real kubectl through the gateway) and the API server's audit as evidence:

- **before**: the previous policy (the operator's reads dropped only for its own custom resources and
  definitions) with the gateway authenticating as the operator, as it did before it had an identity
  of its own;
- **after**: the current policy (`localcluster/audit.py`) with the gateway's own identity.

Counted: what the API server appended to its audit log from the first scenario's start to the last
one's teardown, by authenticated user and level. The verdicts of both arms are printed side by side:
the change must not move any.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.reference.command import identity
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.session import Environments
from oasis_operator.evaluation.scenario_run import RunnerConfig, ScenarioRunner
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway, GatewayConfig
from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane, audit, control_plane
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider

OUT = Path(__file__).parent / "results" / "audit_policy.md"
BIN = Path(sys.executable).parent
NOTE = [
    "Reading the table: in the before arm the gateway authenticated as the operator, so `local-admin` at",
    "Metadata holds the agent's reads through the gateway as well as the operator's own snapshot,",
    "observation and dynamics reads; in the after arm the agent's reads (and the gateway's own filtered",
    "reads and fences) are `oasis:gateway`, and what is left of `local-admin` at Metadata is its fences.",
    "Writes of every identity are kept in both arms (the difference of 2 is the agent's writes moving",
    "from the operator's name to the gateway's). Bytes fall less than lines because the dropped reads",
    "are Metadata events (small) and the kept writes carry request and response bodies.",
    "",
]


def previous_policy(operator_user: str = audit.OPERATOR_USER) -> dict[str, Any]:
    """The policy before the gateway had its own identity: only the operator's CR reads dropped."""
    policy = audit.audit_policy(operator_user)
    for rule in policy["rules"]:
        if rule.get("users") == [operator_user]:
            rule["resources"] = [
                {"group": "oasis.evaluation.dev"},
                {"group": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"]},
            ]
    return policy


def run_arm(arm: str, scenarios: list[Any], work: Path) -> tuple[Counter[tuple[str, str]], int, list[str]]:
    """(events by user and level, bytes appended, verdicts) of one arm on its own fresh plane."""
    control_plane.audit_policy = previous_policy if arm == "before" else audit.audit_policy  # type: ignore[attr-defined]
    plane = LocalControlPlane(run_dir=work / arm)
    plane.start()
    verdicts: list[str] = []
    try:
        api = api_client(plane.kubeconfig)
        time.sleep(5)  # start-up traffic settles
        offset = plane.audit_log.stat().st_size

        async def main() -> None:
            identity_file = plane.kubeconfig if arm == "before" else None
            gateway = Gateway(plane.kubeconfig, work / f"gw-{arm}", GatewayConfig(identity=identity_file))
            await gateway.start()
            stream = ApiServerAudit(api, AuditStream(f"bench {arm}"), files=(plane.audit_log,))
            await stream.start()
            try:
                adapter = CommandAdapter([str(BIN / "oasis"), "agent", "run", "--policy", "careful"],
                                         env={"OASIS_KUBECTL": str(BIN / "kubectl")})  # fmt: skip
                runner = ScenarioRunner(
                    Environments(SandboxProvider(api, prefix="ap"), gateway, apiserver_audit=stream),
                    adapter,
                    RunnerConfig(
                        load_profile(default_profile_path()), identity("careful"),
                        identity("careful").configuration, evaluation=f"bench/{arm}", agent_timeout=180,
                    ),
                )  # fmt: skip
                for scenario in scenarios:
                    run = await runner.run(scenario)
                    verdicts.append(f"{scenario.id}: {run.result.outcome} {run.result.score}")
            finally:
                await stream.stop()
                await gateway.stop()

        asyncio.run(main())
        time.sleep(5)  # the namespace controller's last requests
        api.close()  # type: ignore[no-untyped-call]
        with plane.audit_log.open("rb") as handle:
            handle.seek(offset)
            tail = handle.read()
    finally:
        plane.stop()
    counts: Counter[tuple[str, str]] = Counter()
    for line in tail.decode().splitlines():
        event = json.loads(line)
        counts[(event.get("user", {}).get("username", "?"), event.get("level", "?"))] += 1
    return counts, len(tail), verdicts


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    scenarios = load_profile(default_profile_path()).scenarios[:count]
    load_before = os.getloadavg()
    results: dict[str, list[tuple[Counter[tuple[str, str]], int, list[str]]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="oasis-bench-policy-") as tmp:
        for _ in range(rounds):
            for arm in ("before", "after"):
                results[arm].append(run_arm(arm, scenarios, Path(tmp)))
    load_after = os.getloadavg()
    lines = [
        "# Audit policy: dropping the operator's own reads",
        "",
        f"`bench/audit_policy.py {count} {rounds}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores shared with other work: load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after. {count} scenarios with `careful`, each arm on a fresh local plane; "
        "counted from the first scenario's start to the last one's teardown.",
        "",
        "| arm | round | audit lines | audit bytes | bytes / scenario |",
        "| --- | --- | --- | --- | --- |",
    ]
    for arm, runs in results.items():
        for i, (counts, size, _) in enumerate(runs, 1):
            lines.append(f"| {arm} | {i} | {sum(counts.values()):,} | {size:,} | {size // count:,} |")
    lines += ["", "Events by authenticated user and level (first round):", "",
              "| user | level | before | after |", "| --- | --- | --- | --- |"]  # fmt: skip
    before, after = results["before"][0][0], results["after"][0][0]
    for key in sorted(set(before) | set(after), key=lambda k: -before.get(k, 0)):
        lines.append(f"| {key[0]} | {key[1]} | {before.get(key, 0):,} | {after.get(key, 0):,} |")
    same = all(results["before"][i][2] == results["after"][i][2] for i in range(rounds))
    lines += ["", f"Verdicts equal in both arms: {'yes' if same else 'NO'}.", ""]
    pairs = zip(results["before"][0][2], results["after"][0][2], strict=True)
    lines += [f"- {a} / {b.split(': ')[1]}" for a, b in pairs]
    lines += ["", *NOTE]
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
