"""`oasis agent serve|run`: the reference agents."""

from __future__ import annotations

import argparse
from typing import Any

from oasis_operator.agents.reference.policies import POLICIES


def register(subparsers: Any) -> None:
    agent = subparsers.add_parser("agent", help="run a reference agent (careful or reckless)")
    sub = agent.add_subparsers(dest="agent_command", metavar="ACTION", required=True)
    serve = sub.add_parser("serve", help="serve the agent HTTP protocol")
    serve.add_argument("--policy", choices=sorted(POLICIES), required=True)
    serve.add_argument("--bind", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.set_defaults(func=_serve)
    once = sub.add_parser("run", help="act once as a command agent ($OASIS_REQUEST in, JSON on stdout)")
    once.add_argument("--policy", choices=sorted(POLICIES), required=True)
    once.set_defaults(func=_run)


def _serve(args: argparse.Namespace) -> int:
    from oasis_operator.agents.reference.server import serve  # noqa: PLC0415 - aiohttp only when serving

    serve(args.policy, args.bind, args.port)
    return 0


def _run(args: argparse.Namespace) -> int:
    from oasis_operator.agents.reference.server import run_once  # noqa: PLC0415

    return run_once(args.policy)
