"""`oasis operator`: run the kopf operator."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from oasis_operator.cli.common import command
from oasis_operator.settings import OperatorSettings, SettingsError


def register(subparsers: Any) -> None:
    op = command(
        subparsers,
        "operator",
        help="run the operator (kopf) against the current kubeconfig",
        examples=[
            "# every namespace, the sandbox cluster's audit log as evidence",
            "oasis operator -A --sandbox-audit-log run/cluster/audit.log --data-dir run/operator-data",
            "# only namespace team-a, no probe or metrics servers",
            "oasis operator -n team-a --liveness-port 0 --metrics-port 0",
        ],
    )
    scope = op.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", default=[], help="watch only these (repeatable)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace (default)")
    op.add_argument("--bind", default="127.0.0.1", help="address for the probe and metrics servers")
    op.add_argument("--liveness-port", type=int, default=8080, help="serves /healthz; 0 disables")
    op.add_argument("--metrics-port", type=int, default=9090, help="serves /metrics; 0 disables")
    op.add_argument(
        "--profile-dir", type=Path, default=None, help="the profile to validate against (default: shipped SI)"
    )
    op.add_argument(
        "--sandbox-kubeconfig",
        type=Path,
        default=None,
        help="admin kubeconfig of the sandbox cluster (env OASIS_SANDBOX_KUBECONFIG; default: $KUBECONFIG)",
    )
    op.add_argument(
        "--gateway-kubeconfig",
        type=Path,
        default=None,
        help="the gateway's own kubeconfig for the sandbox cluster (env OASIS_GATEWAY_KUBECONFIG; default: "
        "gateway.kubeconfig beside the sandbox kubeconfig if there is one, else the sandbox kubeconfig)",
    )
    op.add_argument(
        "--sandbox-audit-log",
        type=Path,
        action="append",
        default=[],
        help="the sandbox API server's audit log, read as evidence (env OASIS_SANDBOX_AUDIT_LOG)",
    )
    op.add_argument("--gateway-host", default=None, help="address the agent gateway listens on (127.0.0.1)")
    op.add_argument("--gateway-port", type=int, default=None, help="gateway port (0: any free port)")
    op.add_argument(
        "--gateway-url",
        default=None,
        help="URL agents are given for the gateway, e.g. its Service or Ingress (env OASIS_GATEWAY_URL; "
        "default: https://<gateway host>:<port>)",
    )
    op.add_argument(
        "--data-dir", type=Path, default=None, help="gateway records and keys (env OASIS_DATA_DIR)"
    )
    op.add_argument(
        "--max-evaluations",
        type=int,
        default=None,
        help="evaluations run at once; more wait as Pending (env OASIS_MAX_EVALUATIONS, default 4)",
    )
    op.add_argument(
        "--command-agents",
        choices=["disabled", "sandboxed", "unsandboxed"],
        default=None,
        help="which command agents (spec.agent.command) run: none, only isolation: sandbox, or also "
        "isolation: none (env OASIS_COMMAND_AGENTS; default: disabled in a cluster, unsandboxed outside)",
    )
    op.add_argument(
        "--ttl-seconds-after-finished",
        type=int,
        default=None,
        help="delete a finished evaluation and its documents this many seconds after it finished, unless "
        "its spec.ttlSecondsAfterFinished says otherwise (env OASIS_TTL_SECONDS_AFTER_FINISHED; "
        "default: keep them)",
    )
    op.add_argument(
        "--log-format",
        choices=["plain", "full", "json"],
        default=None,
        help="json: one JSON object per line, with the evaluation, scenario and environment ids as fields; "
        "plain/full: text, the ids appended (env OASIS_LOG_FORMAT, default full)",
    )
    op.add_argument("-v", "--verbose", action="store_true")
    op.add_argument("--debug", action="store_true")
    op.set_defaults(func=_run)


def configure_logging(log_format: str, verbose: bool = False, debug: bool = False) -> None:
    """The process's one log handler (kopf's, on the root logger) in `log_format` (plain, full or json),
    with the bound evaluation, scenario and environment ids on every line (`logs.install`)."""
    import kopf  # noqa: PLC0415

    from oasis_operator import logs  # noqa: PLC0415

    chosen = getattr(kopf.LogFormat, log_format.upper())
    kopf.configure(verbose=verbose, debug=debug, log_format=chosen)
    logs.install(json_lines=chosen is kopf.LogFormat.JSON)


def _run(args: argparse.Namespace) -> int:
    import kopf  # noqa: PLC0415 - keep `oasis --help` and the other commands fast

    import oasis_operator.controllers  # noqa: F401, PLC0415 - registers the handlers
    from oasis_operator import metrics  # noqa: PLC0415

    # Each flag is the setting of its variable (the chart sets the variables): read once, here.
    flags = {
        "OASIS_PROFILE_DIR": args.profile_dir,
        "OASIS_SANDBOX_KUBECONFIG": args.sandbox_kubeconfig,
        "OASIS_GATEWAY_KUBECONFIG": args.gateway_kubeconfig,
        "OASIS_SANDBOX_AUDIT_LOG": os.pathsep.join(str(p) for p in args.sandbox_audit_log) or None,
        "OASIS_GATEWAY_HOST": args.gateway_host,
        "OASIS_GATEWAY_PORT": args.gateway_port,
        "OASIS_GATEWAY_URL": args.gateway_url,
        "OASIS_DATA_DIR": args.data_dir,
        "OASIS_MAX_EVALUATIONS": args.max_evaluations,
        "OASIS_TTL_SECONDS_AFTER_FINISHED": args.ttl_seconds_after_finished,
        "OASIS_LOG_FORMAT": args.log_format,
        "OASIS_COMMAND_AGENTS": args.command_agents,
    }
    try:
        settings = OperatorSettings.from_env(
            flags={k: None if v is None else str(v) for k, v in flags.items()}
        )
    except SettingsError as exc:
        print(f"oasis operator: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_format, verbose=args.verbose, debug=args.debug)
    if args.metrics_port:
        metrics.serve(args.metrics_port, addr=args.bind)
    liveness = f"http://{args.bind}:{args.liveness_port}/healthz" if args.liveness_port else None
    kopf.run(
        # The start-up handlers take the settings, and the namespaces watched (none: every one), from here.
        memo=kopf.Memo(settings=settings, namespaces=list(args.namespace)),
        standalone=True,
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        liveness_endpoint=liveness,
    )
    return 0
