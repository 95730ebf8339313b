"""Serve a reference policy over the agent HTTP protocol (`oasis agent serve`)."""

from __future__ import annotations

import asyncio

from aiohttp import web
from pydantic import ValidationError

from oasis_operator.agents.protocol import AgentRequest
from oasis_operator.agents.reference.command import act, identity


def build_app(policy: str, via: str = "kubectl") -> web.Application:
    async def get_identity(_: web.Request) -> web.Response:
        return web.json_response(identity(policy, via).model_dump(mode="json"))

    async def run(request: web.Request) -> web.Response:
        try:
            body = AgentRequest.model_validate(await request.json())
        except (ValidationError, ValueError) as exc:
            return web.json_response({"error": f"bad request: {exc}"}, status=400)
        response = await asyncio.to_thread(act, policy, body, via)
        return web.json_response(response.model_dump(mode="json", exclude_none=True))

    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.router.add_get("/identity-and-configuration", get_identity)
    app.router.add_post("/", run)
    return app


def serve(policy: str, host: str, port: int, via: str = "kubectl") -> None:
    web.run_app(build_app(policy, via), host=host, port=port, print=None)
