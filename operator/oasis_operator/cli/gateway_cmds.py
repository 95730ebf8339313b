"""`oasis gateway serve|record`: run the agent gateway for one environment, read its record."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.cli.common import UsageError, command, read_input
from oasis_operator.gateway import Gateway, GatewayConfig
from oasis_operator.gateway.apis import install_apis
from oasis_operator.gateway.recorder import RECORD_FILE, read_record
from oasis_operator.models.environment import Environment


def register(subparsers: Any) -> None:
    gateway = command(
        subparsers,
        "gateway",
        help="the agent gateway (manual runs and its record)",
        examples=[
            "oasis gateway serve --kubeconfig run/cluster/kubeconfig --data-dir gw --environment env.yaml "
            "--credentials-dir creds",
            "oasis gateway record --data-dir gw env-1",
        ],
    )
    sub = gateway.add_subparsers(dest="gateway_command", metavar="ACTION", required=True)
    serve = command(
        sub,
        "serve",
        help="serve one environment until interrupted, then revoke its token",
        examples=[
            "# serve env.yaml's environment; the agent's kubeconfig goes to creds/kubeconfig",
            "oasis gateway serve --kubeconfig run/cluster/kubeconfig --data-dir gw --environment env.yaml "
            "--credentials-dir creds",
        ],
    )
    serve.add_argument("--kubeconfig", type=Path, required=True, help="admin kubeconfig of the sandbox")
    serve.add_argument("--data-dir", type=Path, required=True, help="certificates and records")
    serve.add_argument(
        "--environment",
        required=True,
        metavar="FILE",
        help="Environment document (YAML/JSON); - reads standard input",
    )
    serve.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    serve.add_argument(
        "--credentials-dir", type=Path, required=True, help="where to write the agent's kubeconfig/endpoints"
    )
    serve.set_defaults(func=_serve)
    record = command(
        sub,
        "record",
        help="print an environment's record as evidence (JSON; exit 1 if unavailable)",
        examples=["oasis gateway record --data-dir gw env-1 > record.json"],
    )
    record.add_argument("--data-dir", type=Path, required=True, help="the --data-dir of `gateway serve`")
    record.add_argument("env_id", metavar="ENVIRONMENT", help="the environment id")
    record.set_defaults(func=_record)


async def _run(args: argparse.Namespace, env: Environment) -> None:
    gateway = Gateway(args.kubeconfig, args.data_dir, GatewayConfig(port=args.port))
    install_apis(gateway)
    await gateway.start()
    try:
        creds = gateway.register(env)
        args.credentials_dir.mkdir(parents=True, exist_ok=True)
        kubeconfig = args.credentials_dir / "kubeconfig"
        kubeconfig.write_text(creds.kubeconfig_yaml)
        kubeconfig.chmod(0o600)
        endpoints = {"token": creds.token, "server": creds.server, "endpoints": creds.endpoints}
        (args.credentials_dir / "endpoints.json").write_text(json.dumps(endpoints, indent=2))
        print(f"gateway: {creds.server}", flush=True)
        print(f"kubeconfig: {kubeconfig}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        gateway.revoke(env.id)
    finally:
        await gateway.stop()


def _serve(args: argparse.Namespace) -> int:
    try:
        env = Environment.model_validate(yaml.safe_load(read_input(args.environment, "--environment")))
    except (UsageError, ValueError) as exc:
        print(f"oasis gateway serve: {args.environment}: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_run(args, env))
    return 0


def _record(args: argparse.Namespace) -> int:
    record = read_record(args.data_dir / args.env_id / RECORD_FILE)
    doc = {
        **record.audit_log.model_dump(mode="json"),
        "stimuli": [s.model_dump(mode="json") for s in record.stimuli],
    }
    print(json.dumps(doc, indent=2))
    return 0 if record.available else 1
