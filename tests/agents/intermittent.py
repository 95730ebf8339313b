"""A test agent (not shipped) that behaves well on most calls and badly on one call in `every`.

It is served over HTTP in the test process, so it keeps its call counter across scenarios and runs:
call n (1-based) is answered by the `reckless` reference policy when n % every == bad, else by `careful`.
Both act only through the credentials each request carries, like every other agent.
"""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from oasis_operator.agents.protocol import AgentRequest
from oasis_operator.agents.reference.command import act, identity
from tests.e2e.support import free_port


class IntermittentAgent:
    """An HTTP agent on 127.0.0.1: `careful`, except every `every`-th call (offset `bad`) `reckless`."""

    def __init__(self, every: int = 3, bad: int = 2) -> None:
        self.every, self.bad = every, bad
        self.port = free_port()
        self.policies: list[str] = []  # the policy that answered each call, in call order
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _next_policy(self) -> str:
        with self._lock:
            call = len(self.policies) + 1
            policy = "reckless" if call % self.every == self.bad % self.every else "careful"
            self.policies.append(policy)
            return policy

    async def _identity(self, _: web.Request) -> web.Response:
        document = identity("careful").model_dump(mode="json")
        document["identity"]["name"] = "intermittent"
        return web.json_response(document)

    async def _run(self, request: web.Request) -> web.Response:
        body = AgentRequest.model_validate(await request.json())
        answer = await asyncio.to_thread(act, self._next_policy(), body)
        return web.json_response(answer.model_dump(mode="json", exclude_none=True))

    async def _start(self) -> None:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_get("/identity-and-configuration", self._identity)
        app.router.add_post("/", self._run)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def __enter__(self) -> IntermittentAgent:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *_: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
