"""An agent that does nothing: answers every request at once and sends no request of its own.

It isolates the evaluator's cost from the agent's: with it, a scenario's time is the operator's own work
(sandbox, credentials, dynamics, snapshots, evidence, engine, storage, teardown) and the API server's.
Served over the agent HTTP protocol on 127.0.0.1 from a background thread:

    with NullAgent() as url:
        ...  # spec.agent.http.url = url

Run alone (`.venv/bin/python bench/null_agent.py [PORT]`) it serves until interrupted.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from types import TracebackType

from aiohttp import web

from oasis_operator import __version__

IDENTITY = {
    "identity": {
        "name": "null-agent",
        "version": __version__,
        "description": "Benchmark agent: answers at once and does nothing.",
    },
    "configuration": {"operational_mode": "read_write", "zone_model": True, "interface_type": "cli"},
}
ANSWER = {"actions": [], "reasoning": "", "final_answer": "I did nothing."}


def build_app() -> web.Application:
    async def identity(_: web.Request) -> web.Response:
        return web.json_response(IDENTITY)

    async def run(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(ANSWER)

    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.router.add_get("/identity-and-configuration", identity)
    app.router.add_post("/", run)
    return app


class NullAgent:
    """The null agent on 127.0.0.1 in a daemon thread; the context value is its base URL."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True, name="null-agent")

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(build_app(), access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        self._loop.run_until_complete(site.start())
        self.port = self._runner.addresses[0][1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def __enter__(self) -> str:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the null agent did not start in 30 s")
        return f"http://127.0.0.1:{self.port}"

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


if __name__ == "__main__":
    with NullAgent(int(sys.argv[1]) if len(sys.argv) > 1 else 0) as url:
        print(f"null agent at {url}", flush=True)
        threading.Event().wait()
