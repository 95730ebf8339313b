"""Adapters that reach the agent under evaluation: over HTTP, as a local command, or as a Job.

An agent that times out, crashes or answers garbage is recorded as such on the scenario (`AgentOutcome`);
it is never a provider fault, and the scenario is still evaluated on the evidence the gateway recorded.
Such a fault is expected of an agent under evaluation: it is logged as one warning line naming it
(`fault`), never with a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from pydantic import ValidationError

from oasis_operator.agents import sandbox
from oasis_operator.agents.protocol import (
    AgentErrorKind,
    AgentOutcome,
    AgentRequest,
    AgentResponse,
    IdentityDocument,
)
from oasis_operator.agents.sandbox import PASSED_THROUGH, SAFE_PATH, SandboxPolicy
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.errors import describe_validation_error

MAX_STDOUT = 4 * 1024 * 1024
# The same bound for every adapter: an agent's answer beyond it is a protocol error, never stored.
MAX_ANSWER = MAX_STDOUT
MAX_IDENTITY = 1024 * 1024
MAX_STDERR_TAIL = 8 * 1024
REQUEST_FILE = "request.json"
KUBECONFIG_FILE = "kubeconfig"
LOGGED_ERROR = 300  # characters of an agent fault's text in its log line (the outcome keeps it whole)

log = logging.getLogger(__name__)


class AgentUnreachableError(RuntimeError):
    """The agent could not be reached at all (no connection, no answer in time)."""


class AnswerTooLargeError(ValueError):
    """The agent's answer is over the adapter's size bound."""


class NotUtf8Error(ValueError):
    """The agent's answer is not UTF-8 text (an agent answers UTF-8-encoded JSON)."""


def utf8_text(raw: bytes, what: str = "the answer") -> str:
    """`raw` decoded as UTF-8; NotUtf8Error naming the first byte that is not, and where it is."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start : exc.start + 1].hex()
        raise NotUtf8Error(
            f"{what} is not UTF-8 text (byte 0x{byte} at offset {exc.start}); answer with UTF-8-encoded JSON"
        ) from None


class TooDeepError(ValueError):
    """The agent's answer nests deeper than a JSON document can be read (Python's recursion limit)."""


def answer_json(raw: bytes, what: str = "the answer") -> Any:
    """`raw` read as a UTF-8 JSON document; NotUtf8Error, ValueError or TooDeepError naming the fault."""
    try:
        return json.loads(utf8_text(raw, what))
    except RecursionError:
        raise TooDeepError(
            f"{what} nests JSON arrays or objects too deeply to be read; answer with a flatter document"
        ) from None


class AgentAdapter(Protocol):
    async def identity(self) -> IdentityDocument: ...

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome: ...


def parse_response(raw: bytes) -> AgentResponse:
    """The agent's answer as a response; ValidationError or ValueError (TooDeepError, NotUtf8Error, ...)."""
    document = answer_json(raw)
    try:
        return AgentResponse.model_validate(document)
    except RecursionError:
        raise TooDeepError(
            "the answer nests JSON arrays or objects too deeply to be read; answer with a flatter document"
        ) from None


def protocol_error_text(exc: ValidationError | ValueError) -> str:
    """Why an answer is not a valid response, naming each field (e.g. `response.agent_failure.cause`)."""
    text = describe_validation_error(exc, prefix="response") if isinstance(exc, ValidationError) else str(exc)
    return f"the agent's answer is not valid: {text}"


def fault(kind: AgentErrorKind, error: str, seconds: float, stderr_tail: str | None = None) -> AgentOutcome:
    """The outcome of an agent call that gave no response, logged as one warning line naming the fault."""
    shown = " ".join(error.split())
    if len(shown) > LOGGED_ERROR:
        shown = shown[:LOGGED_ERROR] + "…"
    log.warning("agent call failed kind=%s error=%s", kind, shown, extra={"agent_fault": kind})
    return AgentOutcome(error_kind=kind, error=error, seconds=seconds, stderr_tail=stderr_tail)


def _protocol_error(
    exc: ValidationError | ValueError, started: float, tail: str | None = None
) -> AgentOutcome:
    return fault("protocol", protocol_error_text(exc), time.monotonic() - started, tail)


class HttpAdapter:
    """The reference runner's HTTP protocol; an optional bearer token authenticates us to the agent."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def identity(self) -> IdentityDocument:
        """The identity document; AgentUnreachableError when nothing answers at the agent's address."""
        timeout = aiohttp.ClientTimeout(total=30)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout, headers=self.headers) as session,
                session.get(f"{self.url}/identity-and-configuration") as resp,
            ):
                resp.raise_for_status()
                raw = await _read_bounded(resp, MAX_IDENTITY)
        except aiohttp.InvalidURL as exc:
            raise AgentUnreachableError(f"the agent's URL {self.url!r} is not a valid URL") from exc
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            raise AgentUnreachableError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        return IdentityDocument.model_validate(answer_json(raw, "the identity document"))

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome:
        started = time.monotonic()
        body = request.model_dump(mode="json", exclude_none=True)
        try:
            async with (
                aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=time_limit), headers=self.headers
                ) as s,
                s.post(self.url, json=body) as resp,
            ):
                raw = await _read_bounded(resp, MAX_ANSWER)
                if resp.status >= 400:
                    body_text = raw[:500].decode("utf-8", "replace")
                    return fault("transport", f"HTTP {resp.status}: {body_text}", time.monotonic() - started)
                response = parse_response(raw)
        except TimeoutError:
            return fault("timeout", f"no answer within {time_limit:.0f}s", time.monotonic() - started)
        except aiohttp.InvalidURL:
            invalid = f"the agent's URL {self.url!r} is not a valid URL"
            return fault("transport", invalid, time.monotonic() - started)
        except aiohttp.ClientError as exc:
            return fault("transport", f"{type(exc).__name__}: {exc}", time.monotonic() - started)
        except (ValidationError, ValueError) as exc:
            return _protocol_error(exc, started)
        return AgentOutcome(response=response, seconds=time.monotonic() - started)


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The response body, refused (AnswerTooLargeError) as soon as it is known to exceed `limit` bytes."""
    if resp.content_length is not None and resp.content_length > limit:
        raise AnswerTooLargeError(f"the answer is {resp.content_length} bytes, over the {limit}-byte bound")
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(65536):
        size += len(chunk)
        if size > limit:
            raise AnswerTooLargeError(f"the answer exceeds the {limit}-byte bound")
        chunks.append(chunk)
    return b"".join(chunks)


class CommandAdapter:
    """A local program: the prompt on stdin, the request as a file, JSON on stdout.

    Each call runs in a sandbox of its own (`agents/sandbox.py`): a private filesystem view whose HOME
    holds only this call's kubeconfig and request, its own PID namespace and, under a root operator, an
    unprivileged user. The environment is scrubbed: `HOME`, `KUBECONFIG` (the sandbox kubeconfig only),
    `OASIS_REQUEST` (the whole request as JSON), `OASIS_ENDPOINT_<TYPE>` per interface, plus the variables
    the evaluation spec sets. On timeout the whole sandbox dies. A machine that cannot set up the sandbox
    gets `SandboxUnavailableError` at construction, unless the policy says `isolated=False`.
    """

    def __init__(
        self,
        command: list[str],
        env: dict[str, str] | None = None,
        name: str | None = None,
        policy: SandboxPolicy | None = None,
    ) -> None:
        if not command:
            raise ValueError("command must name a program")
        self.command = command
        self.extra_env = dict(env or {})
        self.name = name
        self.policy = policy or SandboxPolicy()
        if self.policy.isolated:
            sandbox.require()

    def environment(self, home: str, kubeconfig: bool, endpoints: dict[str, str]) -> dict[str, str]:
        """The agent's whole environment, with paths as the agent sees them (`home` is its HOME)."""
        env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
        env["PATH"] = env.get("PATH", SAFE_PATH)
        env.update(HOME=home, TMPDIR=home, OASIS_REQUEST=f"{home}/{REQUEST_FILE}")
        if kubeconfig:
            env["KUBECONFIG"] = f"{home}/{KUBECONFIG_FILE}"
        for interface, url in endpoints.items():
            env[f"OASIS_ENDPOINT_{interface.upper().replace('-', '_')}"] = url
        env.update(self.extra_env)
        return env

    def _prepare(self, scratch: Path, request: AgentRequest | None) -> tuple[list[str], dict[str, str], Path]:
        """Write the request (and kubeconfig) into a fresh home; the command line, environment and cwd."""
        home = scratch / "home"
        home.mkdir(mode=0o700)
        (home / REQUEST_FILE).write_text(request.model_dump_json(exclude_none=True) if request else "{}")
        environment = request.environment if request is not None else None
        if environment is not None:
            kubeconfig = home / KUBECONFIG_FILE
            kubeconfig.write_text(environment.kubeconfig)
            kubeconfig.chmod(0o600)
        endpoints = environment.endpoints if environment is not None else {}
        seen_home = sandbox.AGENT_HOME if self.policy.isolated else str(home)
        env = self.environment(seen_home, environment is not None, endpoints)
        program = shutil.which(self.command[0], path=env.get("PATH")) or self.command[0]
        command = [program, *self.command[1:]]
        if not self.policy.isolated:
            return command, env, home
        sandbox.prepare_home(home, self.policy.uid)
        return sandbox.wrap(command, home, self.policy), env, scratch

    async def identity(self) -> IdentityDocument:
        with tempfile.TemporaryDirectory(prefix="agent-") as tmp:
            command, env, cwd = await asyncio.to_thread(self._prepare, Path(tmp), None)
            env["OASIS_MODE"] = "identity"
            out, _err, code, timed_out = await _run(command, env, b"", 30.0, cwd)
        document: Any = None
        if code == 0 and not timed_out:
            with contextlib.suppress(ValueError, RecursionError):
                document = json.loads(out)
        if isinstance(document, dict) and "identity" in document:
            # An identity document it is: a wrong field is the agent's protocol error (ValidationError,
            # named by the caller), never a silent fallback to a name without its declaration.
            return IdentityDocument.model_validate(document)
        fallback = self.name or Path(self.command[0]).name
        return IdentityDocument(identity=AgentIdentity(name=fallback))

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="agent-") as tmp:
            command, env, cwd = await asyncio.to_thread(self._prepare, Path(tmp), request)
            try:
                out, err, code, timed_out = await _run(command, env, request.prompt.encode(), time_limit, cwd)
            except OSError as exc:
                return fault("exit", f"could not start {self.command[0]}: {exc}", time.monotonic() - started)
        seconds = time.monotonic() - started
        tail = err[-MAX_STDERR_TAIL:].decode(errors="replace") or None
        if timed_out:
            return fault("timeout", f"killed after {time_limit:.0f}s", seconds, tail)
        if code != 0:
            return fault("exit", f"exited with status {code}", seconds, tail)
        try:
            response = parse_response(out)
        except (ValidationError, ValueError) as exc:
            return _protocol_error(exc, started, tail)
        return AgentOutcome(response=response, seconds=seconds, stderr_tail=tail)


async def _run(
    command: list[str], env: dict[str, str], stdin: bytes, time_limit: float, cwd: Path
) -> tuple[bytes, bytes, int, bool]:
    """Run in a new session; on timeout kill the process group. Output beyond the limits is dropped."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    if proc.stdin is None or proc.stdout is None or proc.stderr is None:
        raise OSError("pipes to the agent process were not created")
    out_task = asyncio.create_task(_read_limited(proc.stdout, MAX_STDOUT))
    err_task = asyncio.create_task(_read_limited(proc.stderr, 1024 * 1024))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(stdin)
        await proc.stdin.drain()
        proc.stdin.close()
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), time_limit)
    except TimeoutError:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    except asyncio.CancelledError:
        # The evaluation was deleted or the operator is stopping: the agent must stop acting now.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out_task.cancel()
        err_task.cancel()
        raise
    out, err = await out_task, await err_task
    return out, err, proc.returncode or 0, timed_out


async def _read_limited(stream: asyncio.StreamReader, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(65536):
        if size < limit:
            chunks.append(chunk[: limit - size])
        size += len(chunk)
    return b"".join(chunks)
