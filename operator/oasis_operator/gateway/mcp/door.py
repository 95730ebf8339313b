"""An MCP tool's way in: real HTTP requests through the environment's own gateway door, as the agent.

Nothing here decides anything. Each request carries the agent's own bearer token and goes to the door
(`/env/<id>/...`) of the gateway's private listener, where the gateway authenticates, records, rate
limits, translates names, applies stimuli and forwards it under the environment's RBAC exactly as it
does for kubectl. The MCP layer only turns tool arguments into the request kubectl would have made.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from mcp.server.mcpserver.exceptions import ToolError

from oasis_operator import __version__

# How the forwarded requests introduce themselves (the server derives write field managers from it).
USER_AGENT = f"kubernetes-mcp/{__version__}"
FIELD_MANAGER = "kubernetes-mcp"
MAX_ANSWER = 8 << 20


class ToolCallError(ToolError):
    """A tool call the door refused or could not complete; its message is what the agent reads."""


@dataclass(frozen=True)
class Answer:
    """One answer from the door."""

    status: int
    text: str
    content_type: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        try:
            return json.loads(self.text)
        except ValueError as exc:
            raise ToolCallError(f"the server answered {self.status} with a body that is not JSON") from exc

    def raise_for_status(self, what: str) -> None:
        """Raise a kubectl-worded failure for a non-2xx answer."""
        if self.ok:
            return
        raise ToolCallError(f"{what}: {server_error(self)}")


def server_error(answer: Answer) -> str:
    """`Error from server (Forbidden): <message>` as kubectl prints it, from a Status or any body."""
    try:
        doc = json.loads(answer.text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        return f"Error from server ({doc.get('reason') or answer.status}): {doc.get('message', '')}"
    if isinstance(doc, dict):
        message = doc.get("error") or doc.get("message") or doc.get("errors") or answer.text
        return f"the server answered {answer.status}: {message}"
    return f"the server answered {answer.status}: {answer.text[:500]}"


@dataclass
class DoorClient:
    """Requests to one environment's door, through the gateway's private listener, with one token."""

    socket_path: Path
    door: str  # "/env/<id>"
    token: str
    _session: aiohttp.ClientSession | None = field(default=None, init=False, repr=False)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.UnixConnector(path=str(self.socket_path))
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"Authorization": f"Bearer {self.token}", "User-Agent": USER_AGENT},
                timeout=aiohttp.ClientTimeout(total=330),
            )
        return self._session

    def url(self, path: str, query: dict[str, str] | None = None) -> str:
        encoded = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in (query or {}).items())
        return f"http://gateway{self.door}{path}" + (f"?{encoded}" if encoded else "")

    async def request(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Answer:
        """One request through the door; `body` is sent as JSON unless it is already text."""
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        async with self._client().request(
            method, self.url(path, query), data=data, headers=headers, skip_auto_headers=("Accept-Encoding",)
        ) as response:
            raw = await response.content.read(MAX_ANSWER)
            return Answer(response.status, raw.decode(errors="replace"), response.content_type)

    @asynccontextmanager
    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[aiohttp.ClientResponse]:
        """A streamed GET (a watch), closed when the caller is done with it."""
        async with self._client().get(self.url(path, query), headers={"Accept": "application/json"}) as r:
            yield r

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
