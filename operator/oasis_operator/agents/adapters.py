"""Adapters that reach the agent under evaluation: over HTTP, as a local command, or as a Job.

An agent that times out, crashes or answers garbage is recorded as such on the scenario (`AgentOutcome`);
it is never a provider fault, and the scenario is still evaluated on the evidence the gateway recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from pydantic import ValidationError

from oasis_operator.agents.protocol import (
    AgentIdentityDoc,
    AgentOutcome,
    AgentRequest,
    AgentResponse,
    IdentityDocument,
)
from oasis_operator.conditions import describe_validation_error

MAX_STDOUT = 4 * 1024 * 1024
# The same bound for every adapter: an agent's answer beyond it is a protocol error, never stored.
MAX_ANSWER = MAX_STDOUT
MAX_IDENTITY = 1024 * 1024
MAX_STDERR_TAIL = 8 * 1024
# The only variables a command agent inherits; everything else (cloud credentials, API keys, the
# operator's own KUBECONFIG) stays out of its reach.
PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


class AgentUnreachableError(RuntimeError):
    """The agent could not be reached at all (no connection, no answer in time)."""


class AnswerTooLargeError(ValueError):
    """The agent's answer is over the adapter's size bound."""


class AgentAdapter(Protocol):
    async def identity(self) -> IdentityDocument: ...

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome: ...


def _parse_response(raw: Any) -> AgentResponse:
    return AgentResponse.model_validate(raw)


def _protocol_error(exc: ValidationError | ValueError, started: float) -> AgentOutcome:
    text = describe_validation_error(exc, prefix="response") if isinstance(exc, ValidationError) else str(exc)
    return AgentOutcome(
        error_kind="protocol",
        error=f"the agent's answer is not valid: {text}",
        seconds=time.monotonic() - started,
    )


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
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            raise AgentUnreachableError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        return IdentityDocument.model_validate(json.loads(raw))

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
                text = (await _read_bounded(resp, MAX_ANSWER)).decode("utf-8", "replace")
                if resp.status >= 400:
                    return AgentOutcome(
                        error_kind="transport",
                        error=f"HTTP {resp.status}: {text[:500]}",
                        seconds=time.monotonic() - started,
                    )
                response = _parse_response(json.loads(text))
        except TimeoutError:
            return AgentOutcome(
                error_kind="timeout",
                error=f"no answer within {time_limit:.0f}s",
                seconds=time.monotonic() - started,
            )
        except aiohttp.ClientError as exc:
            return AgentOutcome(
                error_kind="transport",
                error=f"{type(exc).__name__}: {exc}",
                seconds=time.monotonic() - started,
            )
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

    The program runs in a new session with a scrubbed environment: a fresh HOME, `KUBECONFIG` pointing
    at the sandbox kubeconfig only, `OASIS_REQUEST` (the whole request as JSON), `OASIS_ENDPOINT_<TYPE>`
    per interface, plus the variables the evaluation spec sets. On timeout the whole process group dies.
    """

    def __init__(
        self, command: list[str], env: dict[str, str] | None = None, name: str | None = None
    ) -> None:
        if not command:
            raise ValueError("command must name a program")
        self.command = command
        self.extra_env = dict(env or {})
        self.name = name

    def environment(
        self, home: Path, kubeconfig: Path | None, request: Path, endpoints: dict[str, str]
    ) -> dict[str, str]:
        env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
        env["PATH"] = env.get("PATH", SAFE_PATH)
        env.update(HOME=str(home), TMPDIR=str(home), OASIS_REQUEST=str(request))
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        for interface, url in endpoints.items():
            env[f"OASIS_ENDPOINT_{interface.upper().replace('-', '_')}"] = url
        env.update(self.extra_env)
        return env

    def _prepare(self, home: Path, request: AgentRequest | None) -> dict[str, str]:
        """Write the request (and kubeconfig) into the private home; the agent's environment."""
        home.chmod(0o700)
        request_file = home / "request.json"
        request_file.write_text(request.model_dump_json(exclude_none=True) if request else "{}")
        if request is None or request.environment is None:
            return self.environment(home, None, request_file, {})
        kubeconfig = home / "kubeconfig"
        kubeconfig.write_text(request.environment.kubeconfig)
        kubeconfig.chmod(0o600)
        return self.environment(home, kubeconfig, request_file, request.environment.endpoints)

    async def identity(self) -> IdentityDocument:
        with tempfile.TemporaryDirectory(prefix="agent-") as tmp:
            env = {**await asyncio.to_thread(self._prepare, Path(tmp), None), "OASIS_MODE": "identity"}
            out, _err, code, timed_out = await _run(self.command, env, b"", 30.0, Path(tmp))
        if code == 0 and not timed_out:
            with contextlib.suppress(ValueError, ValidationError):
                return IdentityDocument.model_validate(json.loads(out))
        fallback = self.name or Path(self.command[0]).name
        return IdentityDocument(identity=AgentIdentityDoc(name=fallback, version="unknown"))

    async def run(self, request: AgentRequest, time_limit: float) -> AgentOutcome:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="agent-") as tmp:
            env = await asyncio.to_thread(self._prepare, Path(tmp), request)
            try:
                out, err, code, timed_out = await _run(
                    self.command, env, request.prompt.encode(), time_limit, Path(tmp)
                )
            except OSError as exc:
                return AgentOutcome(
                    error_kind="exit",
                    error=f"could not start {self.command[0]}: {exc}",
                    seconds=time.monotonic() - started,
                )
        seconds = time.monotonic() - started
        tail = err[-MAX_STDERR_TAIL:].decode(errors="replace") or None
        if timed_out:
            return AgentOutcome(
                error_kind="timeout",
                error=f"killed after {time_limit:.0f}s",
                seconds=seconds,
                stderr_tail=tail,
            )
        if code != 0:
            return AgentOutcome(
                error_kind="exit", error=f"exited with status {code}", seconds=seconds, stderr_tail=tail
            )
        try:
            response = _parse_response(json.loads(out))
        except (ValidationError, ValueError) as exc:
            outcome = _protocol_error(exc, started)
            return outcome.model_copy(update={"stderr_tail": tail})
        return AgentOutcome(response=response, seconds=seconds, stderr_tail=tail)


async def _run(
    command: list[str], env: dict[str, str], stdin: bytes, time_limit: float, cwd: Path
) -> tuple[bytes, bytes, int, bool]:
    """Run in a new session; on timeout kill the process group. Output beyond the limits is dropped."""
    program = shutil.which(command[0], path=env.get("PATH")) or command[0]
    proc = await asyncio.create_subprocess_exec(
        program,
        *command[1:],
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
