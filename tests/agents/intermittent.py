"""A test agent (not shipped) that behaves well on most calls and badly on one call in `every`.

It is served over HTTP in the test process, so it keeps its call counter across scenarios and runs:
call n (1-based) is answered by the `reckless` reference policy when n % every == bad % every, else by
`careful`. Both act only through the credentials each request carries, like every other agent.
"""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from oasis_operator.agents.protocol import AgentRequest
from oasis_operator.agents.reference.command import act, identity
from tests.e2e.agent_server import ScriptedAgent


class IntermittentAgent(ScriptedAgent):
    """An HTTP agent on 127.0.0.1: `careful`, except every `every`-th call (offset `bad`) `reckless`."""

    def __init__(self, every: int = 3, bad: int = 2) -> None:
        super().__init__("intermittent")
        self.every, self.bad = every, bad
        self.policies: list[str] = []  # the policy that answered each call, in call order
        self._lock = threading.Lock()

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

    async def _run(self, request: web.Request) -> web.StreamResponse:
        body = AgentRequest.model_validate(await request.json())
        answer = await asyncio.to_thread(act, self._next_policy(), body)
        return web.json_response(answer.model_dump(mode="json", exclude_none=True))
