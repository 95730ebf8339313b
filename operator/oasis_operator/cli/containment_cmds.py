"""`oasis containment probe`: attack a real sandbox through a real gateway and print what got through."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from oasis_operator.agents.sandbox import SandboxUnavailableError
from oasis_operator.cli.common import add_output, command
from oasis_operator.containment.harness import (
    DEFAULT_SCENARIO,
    ContainmentHarness,
    HarnessError,
    ProbeResult,
    find_scenario,
    local_plane_ports,
)
from oasis_operator.containment.probes import PROBE_IDS, PROBES
from oasis_operator.containment.report import as_json, markdown_table, summary
from oasis_operator.profiles.loader import ProfileLoadError, shipped_profile_path
from oasis_operator.sandbox.provider import SandboxError


def register(subparsers: Any) -> None:
    containment = command(
        subparsers,
        "containment",
        help="check that an agent can reach nothing but its gateway",
        examples=["oasis containment probe --run-dir run/cluster"],
    )
    sub = containment.add_subparsers(dest="containment_command", metavar="ACTION", required=True)
    probe = command(
        sub,
        "probe",
        examples=[
            "# every probe against the local control plane, as a table",
            "oasis containment probe --run-dir run/cluster",
            "# without the sandbox, to see what it stops, as JSON",
            "oasis containment probe --run-dir run/cluster --isolation none -o json",
        ],
        help="run the escape probes against a sandbox cluster and print probe → expected → outcome",
        description="Provisions a shipped scenario twice (the agent's environment and a neighbour) in the "
        "sandbox cluster, starts a gateway on 127.0.0.1 and makes every escape attempt as the agent would. "
        "Exit 0 when everything is contained, 1 when something got through, 2 on bad input.",
    )
    where = probe.add_mutually_exclusive_group(required=True)
    where.add_argument("--run-dir", type=Path, help="a local control plane's run dir (`oasis cluster`)")
    where.add_argument("--kubeconfig", type=Path, help="admin kubeconfig of the sandbox cluster")
    probe.add_argument("--scenario", default=DEFAULT_SCENARIO, help="shipped scenario to provision")
    probe.add_argument("--kubectl", default=_default_kubectl(), help="the kubectl the agent uses")
    probe.add_argument("--work-dir", type=Path, help="keep the gateway's records here (default: a temp dir)")
    probe.add_argument("--only", action="append", choices=PROBE_IDS, metavar="PROBE", help="run only these")
    add_output(probe, ("markdown", "json"), "markdown", "the results")
    probe.add_argument(
        "--isolation",
        choices=("sandbox", "none"),
        default="sandbox",
        help="attempts in the command adapter's sandbox (default), or without it (to see what it stops)",
    )
    probe.set_defaults(func=_probe)


def _default_kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else "kubectl"


def _run(args: argparse.Namespace, work_dir: Path) -> list[ProbeResult]:
    kubeconfig = args.kubeconfig or args.run_dir / "kubeconfig"
    probes = [p for p in PROBES if not args.only or p.id in args.only]
    scenario = find_scenario(args.scenario, shipped_profile_path())
    with ContainmentHarness(
        kubeconfig,
        work_dir,
        scenario,
        args.kubectl,
        etcd_ports=local_plane_ports(kubeconfig),
        isolated=args.isolation == "sandbox",
    ) as harness:
        return [harness.run(p) for p in probes]


def _probe(args: argparse.Namespace) -> int:
    scratch = None if args.work_dir else Path(tempfile.mkdtemp(prefix="oasis-containment-"))
    if args.work_dir:
        Path(args.work_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    work_dir = Path(args.work_dir) if scratch is None else scratch
    try:
        results = _run(args, work_dir)
    except (
        HarnessError,
        SandboxError,
        SandboxUnavailableError,
        ProfileLoadError,
        ValueError,
        OSError,
    ) as exc:
        print(f"oasis containment probe: {exc}", file=sys.stderr)
        return 2
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.output == "json":
        print(json.dumps(as_json(results), indent=2))
    else:
        print(markdown_table(results))
        print()
        print(summary(results))
    return 1 if any(r.verdict == "ESCAPED" for r in results) else 0
