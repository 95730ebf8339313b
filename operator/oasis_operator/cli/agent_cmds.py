"""`oasis agent serve|run|sandbox`: the reference agents, and the sandbox any agent can be run in."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from oasis_operator.agents.reference.registry import POLICY_NAMES
from oasis_operator.agents.reference.via import HANDS
from oasis_operator.agents.sandbox import (
    AGENT_HOME,
    PASSED_THROUGH,
    SAFE_PATH,
    SandboxPolicy,
    SandboxUnavailableError,
    require,
    wrap,
)
from oasis_operator.cli.common import command

# `oasis agent run` is started once per scenario: what only one action needs (aiohttp for `serve`, the
# operator's settings for `sandbox`) is imported by that action, not here; `tests/unit/agents/
# test_agent_start.py` checks what the process loads.


def register(subparsers: Any) -> None:
    agent = command(
        subparsers,
        "agent",
        help="run a reference agent, or any agent in a sandbox",
        examples=[
            "oasis agent serve --policy careful --port 18765",
            "oasis agent sandbox --pass-env OPENAI_API_KEY -- ./my-agent --port 8080",
        ],
    )
    sub = agent.add_subparsers(dest="agent_command", metavar="ACTION", required=True)
    serve = command(
        sub,
        "serve",
        help="serve the agent HTTP protocol",
        examples=[
            "# the careful reference agent, acting through kubectl",
            "oasis agent serve --policy careful --port 18765",
            "# through MCP tools only",
            "oasis agent serve --policy careful --via mcp --port 18766",
        ],
    )
    serve.add_argument("--policy", choices=POLICY_NAMES, required=True, help="the reference agent")
    serve.add_argument(
        "--via", choices=HANDS, default="kubectl", help="act through kubectl or MCP tools only"
    )
    serve.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    serve.set_defaults(func=_serve)
    once = command(
        sub,
        "run",
        help="act once as a command agent ($OASIS_REQUEST in, JSON on stdout)",
        examples=["# the command of an OASISEvaluation's command agent", "oasis agent run --policy reckless"],
    )
    once.add_argument("--policy", choices=POLICY_NAMES, required=True, help="the reference agent")
    once.add_argument("--via", choices=HANDS, default="kubectl", help="act through kubectl or MCP tools only")
    once.set_defaults(func=_run)
    box = command(
        sub,
        "sandbox",
        examples=[
            "# your HTTP agent, seeing only its program, the kubeconfig and the model's key",
            "oasis agent sandbox --read-only ~/agent.kubeconfig --pass-env OPENAI_API_KEY -- ./my-agent",
        ],
        help="run COMMAND (e.g. your HTTP agent) in the sandbox command agents get",
        description="Runs COMMAND the way the operator runs command agents: a private filesystem view "
        "(system directories read-only, a fresh empty HOME, the program and its interpreter, the paths "
        "given with --read-only), its own PID namespace, an unprivileged user when run as root, a scrubbed "
        "environment, the host's network. Exit status: COMMAND's; 2 when no sandbox can be set up.",
    )
    box.add_argument("--read-only", action="append", default=[], type=Path, metavar="PATH",
                     help="a host path the agent may read (repeatable)")  # fmt: skip
    box.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="set a variable")
    box.add_argument("--pass-env", action="append", default=[], metavar="NAME",
                     help="pass a variable of this shell through (e.g. your model's API key)")  # fmt: skip
    box.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    box.set_defaults(func=_sandbox)


def _serve(args: argparse.Namespace) -> int:
    from oasis_operator.agents.reference.server import serve  # noqa: PLC0415 - aiohttp only when serving

    serve(args.policy, args.bind, args.port, args.via)
    return 0


def _run(args: argparse.Namespace) -> int:
    from oasis_operator.agents.reference.command import run_once  # noqa: PLC0415

    return run_once(args.policy, args.via)


def sandbox_environment(settings: list[str], passed: list[str]) -> dict[str, str]:
    """The scrubbed environment of a sandboxed agent, plus what the caller sets or passes through."""
    env = {k: os.environ[k] for k in (*PASSED_THROUGH, *passed) if k in os.environ}
    env.setdefault("PATH", SAFE_PATH)
    env.update(HOME=AGENT_HOME, TMPDIR=AGENT_HOME)
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or not name:
            raise ValueError(f"--env {setting!r}: write NAME=VALUE")
        env[name] = value
    return env


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # subprocess.run then kills the sandbox (it dies with its parent)


def _sandbox(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("oasis agent sandbox: give the command after --", file=sys.stderr)
        return 2
    from oasis_operator.settings import OperatorSettings  # noqa: PLC0415

    try:
        require()
        env = sandbox_environment(args.env, args.pass_env)
        uid = OperatorSettings.only("OASIS_AGENT_UID").agent_uid  # the operator's setting, when set
        argv = wrap(command, None, SandboxPolicy(read_only=tuple(args.read_only), uid=uid))
    except (SandboxUnavailableError, ValueError) as exc:
        print(f"oasis agent sandbox: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)
    return subprocess.run(argv, env=env, check=False).returncode
