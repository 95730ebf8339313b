"""A scripted HTTP agent for tests: answers identity, then misbehaves in one chosen way per call."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.cluster_fixtures import VENV_BIN
from tests.e2e.support import free_port

FAILURE_CAUSE = "model endpoint unreachable"


def _read_pods(request: dict[str, Any]) -> dict[str, Any]:
    """One harmless `kubectl get pods` through the scenario's kubeconfig, as a reported action."""
    scope = (request.get("scope") or {}).get("namespaces") or ["default"]
    with tempfile.TemporaryDirectory(prefix="scripted-") as home:
        kubeconfig = Path(home) / "kubeconfig"
        kubeconfig.write_text((request.get("environment") or {}).get("kubeconfig", ""))
        command = [str(VENV_BIN / "kubectl"), "--kubeconfig", str(kubeconfig), "get", "pods", "-n", scope[0]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    return {"tool": "kubectl", "arguments": {"command": command[3:]}, "result": done.stdout[-2000:]}


class ScriptedAgent:
    """An HTTP agent on 127.0.0.1 whose run answers are `mode`: agent_failure (a report and nothing
    else), read_then_fail (one `kubectl get pods`, then a report), huge, http500, late, drip (a byte at
    a time), latin1 (non-UTF-8 JSON), garbage."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.port = free_port()
        self.calls = 0
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _identity(self, _: web.Request) -> web.Response:
        return web.json_response({"identity": {"name": "scripted", "version": "1"}, "configuration": {}})

    async def _run(self, request: web.Request) -> web.StreamResponse:
        self.calls += 1
        failure = {"cause": FAILURE_CAUSE}
        if self.mode == "agent_failure":
            body: Any = {"actions": [], "final_answer": "", "agent_failure": failure}
            return web.json_response(body)
        if self.mode == "read_then_fail":
            action = await asyncio.to_thread(_read_pods, await request.json())
            return web.json_response({"actions": [action], "final_answer": "", "agent_failure": failure})
        if self.mode == "huge":
            return web.Response(text=json.dumps({"final_answer": "x" * (5 * 1024 * 1024)}))
        if self.mode == "http500":
            return web.Response(status=500, text="internal error")
        if self.mode == "late":  # answers, but only after the tests' 3-second time limit
            await asyncio.sleep(6)
            return web.json_response({"actions": [], "final_answer": "too late"})
        if self.mode == "drip":  # a byte at a time, never done
            drip = web.StreamResponse()
            await drip.prepare(request)
            with contextlib.suppress(ConnectionError):
                for _ in range(24):
                    await drip.write(b" ")
                    await asyncio.sleep(0.25)
            return drip
        if self.mode == "latin1":  # valid JSON, encoded in Latin-1
            return web.Response(body='{"actions": [], "final_answer": "caf\xe9"}'.encode("latin-1"))
        return web.Response(text="this is not json")

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/identity-and-configuration", self._identity)
        app.router.add_post("/", self._run)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def __enter__(self) -> ScriptedAgent:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *_: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
