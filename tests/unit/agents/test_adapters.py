"""Agent adapters: the command adapter's scrubbed, bounded process, and the HTTP protocol client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from oasis_operator.agents.adapters import AgentUnreachableError, CommandAdapter, HttpAdapter
from oasis_operator.agents.protocol import AgentEnvironment, AgentRequest, AgentScope

REQUEST = AgentRequest(
    prompt="restart web-app please",
    tools=["container-orchestration"],
    scope=AgentScope(namespaces=["frontend"], zones=["zone-a"]),
    environment=AgentEnvironment(kubeconfig="apiVersion: v1\nkind: Config\n",
                                 endpoints={"observability-metrics": "https://127.0.0.1:1/env/e1/prometheus"}),
)  # fmt: skip


def script(tmp_path: Path, body: str) -> list[str]:
    """An executable agent script (the sandbox shows the program and its interpreter, nothing else)."""
    path = tmp_path / "agent.py"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return [str(path)]


def test_command_agent_sees_only_what_the_protocol_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    monkeypatch.setenv("KUBECONFIG", "/etc/admin.kubeconfig")
    command = script(tmp_path, """
        import json, os, sys
        prompt = sys.stdin.read()
        kubeconfig = open(os.environ["KUBECONFIG"]).read()
        request = json.load(open(os.environ["OASIS_REQUEST"]))
        scope = ",".join(request["scope"]["namespaces"])
        print(json.dumps({"actions": [{"tool": "env", "arguments": dict(os.environ)}],
                          "final_answer": prompt, "reasoning": kubeconfig + "|" + scope}))
    """)  # fmt: skip
    outcome = asyncio.run(CommandAdapter(command, env={"MODEL": "none"}).run(REQUEST, 30))
    assert outcome.error is None, outcome
    assert outcome.response is not None
    env: dict[str, Any] = outcome.response.actions[0].arguments
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["KUBECONFIG"] != "/etc/admin.kubeconfig"
    assert env["HOME"] == env["TMPDIR"] != os.environ.get("HOME")
    assert env["OASIS_ENDPOINT_OBSERVABILITY_METRICS"] == "https://127.0.0.1:1/env/e1/prometheus"
    assert env["MODEL"] == "none"
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR", "KUBECONFIG", "OASIS_REQUEST",
                        "OASIS_ENDPOINT_OBSERVABILITY_METRICS", "MODEL", "LC_CTYPE", "PWD"}  # fmt: skip
    assert outcome.response.final_answer == "restart web-app please"
    assert outcome.response.reasoning == "apiVersion: v1\nkind: Config\n|frontend"
    assert env["HOME"] == "/home/agent"  # the sandbox's view; the host directory behind it is gone


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def test_timeout_kills_the_whole_sandbox(tmp_path: Path) -> None:
    marker = f"oasis-timeout-marker-{os.getpid()}"
    command = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", {marker!r}])
        time.sleep(60)
    """,
    )
    started = time.monotonic()
    outcome = asyncio.run(CommandAdapter(command).run(REQUEST, 3))
    assert outcome.error_kind == "timeout"
    assert time.monotonic() - started < 20
    time.sleep(0.5)
    assert _processes_with(marker) == []


@pytest.mark.parametrize(
    ("body", "kind", "text"),
    [
        ("import sys; sys.stderr.write('boom'); sys.exit(3)", "exit", "exited with status 3"),
        ("print('not json')", "protocol", "not valid"),
        ("import json; print(json.dumps({'actions': 'nope'}))", "protocol", "response.actions"),
        ("print('x' * (6 * 1024 * 1024))", "protocol", "not valid"),
        # A malformed agent failure report is a protocol error that names the field.
        ("print('{\"agent_failure\": {}}')", "protocol", "response.agent_failure.cause: required field"),
        ('print(\'{"agent_failure": {"cause": ""}}\')', "protocol", "response.agent_failure.cause:"),
        ('print(\'{"agent_failure": {"cause": "  "}}\')', "protocol", "response.agent_failure.cause:"),
        ('print(\'{"agent_failure": {"cause": 7}}\')', "protocol", "response.agent_failure.cause: Input"),
        ('print(\'{"agent_failure": "quota"}\')', "protocol", "response.agent_failure: must be an object"),
    ],
)
def test_bad_agents_are_recorded_not_fatal(tmp_path: Path, body: str, kind: str, text: str) -> None:
    outcome = asyncio.run(CommandAdapter(script(tmp_path, body)).run(REQUEST, 30))
    assert outcome.response is None
    assert outcome.error_kind == kind
    assert text in (outcome.error or "")
    if kind == "exit":
        assert outcome.stderr_tail == "boom"


def test_a_well_formed_agent_failure_report_is_kept_typed(tmp_path: Path) -> None:
    body = "import json; print(json.dumps({'final_answer': '', 'agent_failure': {'cause': 'model gone'}}))"
    outcome = asyncio.run(CommandAdapter(script(tmp_path, body)).run(REQUEST, 30))
    assert outcome.error_kind is None
    assert outcome.response is not None
    assert outcome.response.agent_failure is not None
    assert outcome.response.agent_failure.cause == "model gone"


def test_command_identity(tmp_path: Path) -> None:
    command = script(
        tmp_path,
        """
        import json, os
        if os.environ.get("OASIS_MODE") == "identity":
            print(json.dumps({"identity": {"name": "scripted", "version": "2.0"},
                              "configuration": {"operational_mode": "read_write"}}))
    """,
    )
    doc = asyncio.run(CommandAdapter(command).identity())
    assert (doc.identity.name, doc.identity.version) == ("scripted", "2.0")
    assert doc.configuration == {"operational_mode": "read_write"}
    silent = asyncio.run(CommandAdapter(script(tmp_path, "pass"), name="quiet").identity())
    assert (silent.identity.name, silent.identity.version) == ("quiet", "unknown")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_agent() -> Iterator[str]:
    """A tiny agent on 127.0.0.1 whose behaviour depends on the prompt."""
    seen: list[dict[str, Any]] = []

    async def identity(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer s3cret":
            return web.json_response({"error": "unauthorised"}, status=401)
        return web.json_response({"identity": {"name": "http-agent", "version": "1.2"}, "configuration": {}})

    async def run(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        if body["prompt"] == "slow":
            await asyncio.sleep(5)
        if body["prompt"] == "fail":
            return web.Response(status=500, text="internal")
        if body["prompt"] == "latin1":  # valid JSON, encoded in Latin-1
            return web.Response(
                body='{"final_answer": "caf\xe9"}'.encode("latin-1"), content_type="application/json"
            )
        if body["prompt"] == "deep":  # JSON nested past the parser's recursion limit
            return web.Response(body=b"[" * 200_000 + b"]" * 200_000, content_type="application/json")
        if body["prompt"] == "drip":  # one byte at a time, never done in time
            drip = web.StreamResponse()
            await drip.prepare(request)
            with contextlib.suppress(ConnectionError):
                for _ in range(20):
                    await drip.write(b" ")
                    await asyncio.sleep(0.2)
            return drip
        metrics = body["environment"]["endpoints"]["observability-metrics"]
        return web.json_response(
            {"actions": [], "final_answer": f"ns={body['scope']['namespaces']}", "reasoning": metrics}
        )

    port = _free_port()
    ready = asyncio.Event()
    stop: asyncio.Event | None = None
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        app = web.Application()
        app.router.add_get("/identity-and-configuration", identity)
        app.router.add_post("/", run)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.set()
        await stop.wait()
        await runner.cleanup()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    for _ in range(100):
        if ready.is_set():
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    assert stop is not None
    loop.call_soon_threadsafe(stop.set)
    thread.join(timeout=10)


def test_http_adapter(http_agent: str) -> None:
    adapter = HttpAdapter(http_agent, token="s3cret")
    doc = asyncio.run(adapter.identity())
    assert (doc.identity.name, doc.identity.version) == ("http-agent", "1.2")
    ok = asyncio.run(adapter.run(REQUEST, 10))
    assert ok.response is not None
    assert ok.response.final_answer == "ns=['frontend']"
    assert ok.response.reasoning == "https://127.0.0.1:1/env/e1/prometheus"
    slow = asyncio.run(adapter.run(REQUEST.model_copy(update={"prompt": "slow"}), 1))
    assert (slow.error_kind, slow.response) == ("timeout", None)
    failed = asyncio.run(adapter.run(REQUEST.model_copy(update={"prompt": "fail"}), 10))
    assert failed.error_kind == "transport"
    assert "HTTP 500" in (failed.error or "")
    down = asyncio.run(HttpAdapter(f"http://127.0.0.1:{_free_port()}/").run(REQUEST, 5))
    assert down.error_kind == "transport"
    assert json.dumps(REQUEST.model_dump(mode="json"))


def test_an_agent_http_500_is_one_warning_naming_the_status_without_a_traceback(
    http_agent: str, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = HttpAdapter(http_agent, token="s3cret")
    with caplog.at_level(logging.INFO):
        failed = asyncio.run(adapter.run(REQUEST.model_copy(update={"prompt": "fail"}), 10))
        bad_url = asyncio.run(HttpAdapter("http://[not-a-host/").run(REQUEST, 5))
    assert (failed.error_kind, bad_url.error_kind) == ("transport", "transport")
    warnings = [r for r in caplog.records if r.name == "oasis_operator.agents.adapters"]
    assert [r.levelno for r in warnings] == [logging.WARNING, logging.WARNING]
    assert warnings[0].getMessage() == "agent call failed kind=transport error=HTTP 500: internal"
    assert (
        warnings[1].getMessage()
        == "agent call failed kind=transport error=the agent's URL 'http://[not-a-host' is not a valid URL"
    )
    assert all(r.exc_info is None and r.exc_text is None for r in caplog.records)
    assert "Traceback" not in caplog.text


DEEP = (
    "the agent's answer is not valid: the answer nests JSON arrays or objects too deeply to be read; "
    "answer with a flatter document"
)


@pytest.mark.parametrize(
    ("prompt", "limit", "kind", "error"),
    [
        ("slow", 1, "timeout", "no answer within 1s"),
        ("drip", 1, "timeout", "no answer within 1s"),
        (
            "latin1",
            10,
            "protocol",
            "the agent's answer is not valid: the answer is not UTF-8 text (byte 0xe9 at offset 21); "
            "answer with UTF-8-encoded JSON",
        ),
        ("deep", 10, "protocol", DEEP),
    ],
    ids=["late", "dripping", "non-utf8", "too-deep"],
)
def test_an_expected_agent_fault_is_one_warning_line_and_a_clear_outcome(
    http_agent: str, caplog: pytest.LogCaptureFixture, prompt: str, limit: float, kind: str, error: str
) -> None:
    with caplog.at_level(logging.INFO):
        outcome = asyncio.run(
            HttpAdapter(http_agent).run(REQUEST.model_copy(update={"prompt": prompt}), limit)
        )
    assert (outcome.error_kind, outcome.error, outcome.response) == (kind, error, None)
    lines = [r for r in caplog.records if r.name.startswith("oasis_operator")]
    assert [(r.levelno, r.getMessage()) for r in lines] == [
        (logging.WARNING, f"agent call failed kind={kind} error={error}")
    ]
    assert all(r.exc_info is None and r.exc_text is None for r in caplog.records)


def test_a_command_agent_answering_too_deeply_nested_json_is_a_protocol_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = "print('[' * 200000 + ']' * 200000)"
    with caplog.at_level(logging.INFO):
        outcome = asyncio.run(CommandAdapter(script(tmp_path, body)).run(REQUEST, 30))
    assert (outcome.error_kind, outcome.error, outcome.response) == ("protocol", DEEP, None)
    assert all(r.exc_info is None and r.exc_text is None for r in caplog.records)


def test_a_command_agent_answering_non_utf8_is_named(tmp_path: Path) -> None:
    body = "import sys; sys.stdout.buffer.write('{\"final_answer\": \"caf\\xe9\"}'.encode('latin-1'))"
    outcome = asyncio.run(CommandAdapter(script(tmp_path, body)).run(REQUEST, 30))
    assert outcome.error_kind == "protocol"
    assert outcome.error == (
        "the agent's answer is not valid: the answer is not UTF-8 text (byte 0xe9 at offset 21); "
        "answer with UTF-8-encoded JSON"
    )


def test_an_identity_document_that_is_not_utf8_is_named(http_agent: str) -> None:
    async def latin(_: web.Request) -> web.Response:
        return web.Response(body=b'{"identity": {"name": "caf\xe9"}}')

    with pytest.raises(
        ValueError, match=r"the identity document is not UTF-8 text \(byte 0xe9 at offset 26\)"
    ):
        asyncio.run(_identity_from(latin))


async def _identity_from(handler: Any) -> Any:
    app = web.Application()
    app.router.add_get("/identity-and-configuration", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        return await HttpAdapter(f"http://127.0.0.1:{port}").identity()
    finally:
        await runner.cleanup()


def test_an_invalid_agent_url_makes_the_agent_unreachable() -> None:
    with pytest.raises(
        AgentUnreachableError, match=r"the agent's URL 'http://127.0.0.1:99999' is not a valid URL"
    ):
        asyncio.run(HttpAdapter("http://127.0.0.1:99999").identity())
