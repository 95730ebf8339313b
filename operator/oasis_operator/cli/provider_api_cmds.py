"""`oasis provider-api serve`: the OASIS provider API on its own, for the public runner (`oasisctl`)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from oasis_operator.cli.common import command


def register(subparsers: Any) -> None:
    group = command(
        subparsers,
        "provider-api",
        help="the OASIS provider API for the public runner",
        examples=[
            "oasis provider-api serve --kubeconfig run/cluster/kubeconfig --data-dir papi --token-file token"
        ],
    )
    sub = group.add_subparsers(dest="provider_api_command", metavar="ACTION", required=True)
    serve = command(
        sub,
        "serve",
        examples=[
            "# serve until interrupted; the runner (`oasisctl`) is given the printed URL, CA and token",
            "oasis provider-api serve --kubeconfig run/cluster/kubeconfig --data-dir papi --token-file token "
            "--port 18443",
        ],
        help="serve /v1/conformance, /v1/provision, ... until interrupted",
        description="Serves the OASIS provider API over HTTPS with the sandbox cluster of --kubeconfig "
        "and an agent gateway of its own. Prints the API's URL, the CA its certificate is signed by and "
        "each door's kubeconfig (the credential the agent keeps across scenarios).",
    )
    serve.add_argument("--kubeconfig", type=Path, required=True, help="admin kubeconfig of the sandbox")
    serve.add_argument("--data-dir", type=Path, required=True, help="certificates, records, doors")
    serve.add_argument("--token-file", type=Path, required=True, help="file holding the API's token")
    serve.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    serve.add_argument("--gateway-port", type=int, default=0, help="the agent gateway's port (0: any free)")
    serve.add_argument("--prefix", default="sbx", help="sandbox namespace prefix")
    serve.add_argument("--door", action="append", default=[], metavar="PRINCIPAL",
                       help="an agent door (repeatable; default oasis-agent)")  # fmt: skip
    serve.set_defaults(func=_serve)


async def _run(args: argparse.Namespace) -> int:
    # Imported here: the CLI's other commands need neither aiohttp nor the Kubernetes client.
    from oasis_operator.gateway import Gateway, GatewayConfig  # noqa: PLC0415
    from oasis_operator.kube import api_client  # noqa: PLC0415
    from oasis_operator.profiles import load_profile  # noqa: PLC0415
    from oasis_operator.profiles.loader import shipped_profile_path  # noqa: PLC0415
    from oasis_operator.provider_api import (  # noqa: PLC0415
        DEFAULT_DOOR,
        ProviderApiSettings,
        door_kubeconfig,
        read_token_file,
        start_provider_api,
    )
    from oasis_operator.sandbox.provider import SandboxProvider  # noqa: PLC0415

    settings = ProviderApiSettings(
        port=args.port,
        token=read_token_file(args.token_file, "--token-file"),
        data_dir=args.data_dir / "provider-api",
        doors=tuple(args.door) or (DEFAULT_DOOR,),
    )
    gateway = Gateway(args.kubeconfig, args.data_dir / "gateway", GatewayConfig(port=args.gateway_port))
    await gateway.start()
    api = api_client(args.kubeconfig)
    try:
        provider = SandboxProvider(api, prefix=args.prefix)
        server = await start_provider_api(
            settings, provider, gateway, load_profile(shipped_profile_path()), api
        )
        print(f"provider-api: {server.url}", flush=True)
        print(f"ca: {server.ca_cert}", flush=True)
        for principal in settings.doors:
            print(f"door {principal}: {door_kubeconfig(settings.data_dir, principal)}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()
    finally:
        await gateway.stop()
        api.close()  # type: ignore[no-untyped-call]
    return 0


def _serve(args: argparse.Namespace) -> int:
    from oasis_operator.provider_api import ProviderApiSettingsError  # noqa: PLC0415

    try:
        return asyncio.run(_run(args))
    except (ProviderApiSettingsError, OSError) as exc:
        print(f"oasis provider-api serve: {exc}", file=sys.stderr)
        return 2
