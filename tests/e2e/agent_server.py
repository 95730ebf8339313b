"""A scripted HTTP agent for tests: answers identity, then misbehaves in one chosen way per call."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web

from tests.e2e.support import free_port


class ScriptedAgent:
    """An HTTP agent on 127.0.0.1 whose run answers are `mode`: agent_failure, huge, garbage."""

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

    async def _run(self, _: web.Request) -> web.StreamResponse:
        self.calls += 1
        if self.mode == "agent_failure":
            body: Any = {"actions": [], "final_answer": "", "agent_failure": "model quota exhausted"}
            return web.json_response(body)
        if self.mode == "huge":
            return web.Response(text=json.dumps({"final_answer": "x" * (5 * 1024 * 1024)}))
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
