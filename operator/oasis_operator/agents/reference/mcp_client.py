"""A blocking handle on an environment's MCP server (the official `mcp` client SDK, Streamable HTTP).

The reference policies are plain synchronous code; the SDK is async. `McpConnection` keeps one SDK
`Client` open in an event loop of its own thread, and `call` runs one tool call there and waits for it.
The server's URL is `environment.endpoints["mcp"]`; the token and the CA come from the kubeconfig the
agent was given (the same credentials as for kubectl).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import httpx2
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

CALL_TIMEOUT = 330.0


class McpConnectError(Exception):
    """The MCP session could not be opened (refused credentials, unreachable server, ...)."""


def _messages(exc: BaseException) -> list[str]:
    if isinstance(exc, BaseExceptionGroup):
        return [m for inner in exc.exceptions for m in _messages(inner)]
    return [f"{type(exc).__name__}: {exc}"]


@dataclass(frozen=True)
class McpCredentials:
    """Where the MCP server is and how to authenticate to it."""

    url: str
    token: str
    ca_pem: str | None = None


def credentials_from(kubeconfig_yaml: str, url: str) -> McpCredentials:
    """The bearer token and CA of a kubeconfig (its current context's user and cluster)."""
    doc = yaml.safe_load(kubeconfig_yaml) or {}
    current = doc.get("current-context")
    context: dict[str, Any] = next(
        (c["context"] for c in doc.get("contexts") or [] if c.get("name") == current), {}
    )
    user: dict[str, Any] = next(
        (u["user"] for u in doc.get("users") or [] if u.get("name") == context.get("user")), {}
    )
    cluster: dict[str, Any] = next(
        (c["cluster"] for c in doc.get("clusters") or [] if c.get("name") == context.get("cluster")), {}
    )
    token = str(user.get("token") or "")
    if not token:
        raise ValueError("the kubeconfig has no bearer token for its current context; MCP needs one")
    ca_data = cluster.get("certificate-authority-data")
    ca = base64.b64decode(ca_data).decode() if ca_data else None
    return McpCredentials(url=url, token=token, ca_pem=ca)


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool call returned: its text and whether the server called it an error."""

    text: str
    is_error: bool


class McpConnection:
    """One open MCP client session, usable from synchronous code (a context manager)."""

    def __init__(self, creds: McpCredentials) -> None:
        self.creds = creds
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._client: Client | None = None
        self._held: Future[None] | None = None
        self._stop: asyncio.Event | None = None

    def __enter__(self) -> McpConnection:
        self._thread.start()
        opened: Future[None] = Future()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(opened), self._loop)
        try:
            opened.result(timeout=60)
        except BaseException as exc:
            self.__exit__()
            reasons = "; ".join(_messages(exc))
            raise McpConnectError(f"cannot open the MCP session at {self.creds.url}: {reasons}") from exc
        return self

    def __exit__(self, *_: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._held is not None:
            try:
                self._held.result(timeout=30)
            except BaseException:  # noqa: BLE001 - closing must not hide the caller's own outcome
                self._held.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _hold(self, opened: Future[None]) -> None:
        """Open the client, keep it open until told to stop, and close it in this same task."""
        self._stop = asyncio.Event()
        verify: ssl.SSLContext | bool = True
        if self.creds.ca_pem:
            verify = ssl.create_default_context(cadata=self.creds.ca_pem)
        try:
            async with (
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {self.creds.token}"} if self.creds.token else {},
                    verify=verify,
                    timeout=httpx2.Timeout(30.0, read=CALL_TIMEOUT),
                ) as http,
                Client(streamable_http_client(self.creds.url, http_client=http)) as client,
            ):
                self._client = client
                opened.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise
        finally:
            self._client = None

    def tools(self) -> list[str]:
        """The names of the tools the server offers."""
        result = self._run(self._list())
        return list(result)

    async def _list(self) -> list[str]:
        listed = await self._open().list_tools()
        return [tool.name for tool in listed.tools]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolAnswer:
        """Call one tool and wait for its answer."""
        answer: ToolAnswer = self._run(self._call(name, arguments))
        return answer

    async def _call(self, name: str, arguments: dict[str, Any]) -> ToolAnswer:
        result = await self._open().call_tool(name, arguments)
        text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
        return ToolAnswer(text=text, is_error=bool(result.is_error))

    def _open(self) -> Client:
        if self._client is None:
            raise McpConnectError("the MCP connection is closed")
        return self._client

    def _run(self, coro: Any) -> Any:
        if self._client is None:
            raise RuntimeError("the MCP connection is not open")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=CALL_TIMEOUT + 30)
