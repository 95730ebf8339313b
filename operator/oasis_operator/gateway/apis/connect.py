"""`kubectl exec`, `attach` and `port-forward` where the scenario grants them, served by the gateway itself.

Nothing is forwarded and nothing runs: the sandbox has no kubelet (kwok plays the nodes), and the
operator's machine never runs an agent's command. The request is decided as the API server decides it,
in its order and words: RBAC (a SubjectAccessReview of `create` on `pods/<subresource>` for the agent, so
out of zone it is the same 403), the pod (404), the container (400, `container X is not valid for pod
P`), a node and a running container (400). Then the stream is served over WebSocket (`channels.py`):

- `exec`: the scenario's declared answer for the pod, container and command (`models.connect`), else
  the answer drawn from what the container sees (`exec_shell.py`, `container_view.py`: its environment
  with ConfigMap and Secret values resolved, its mounted files, its hostname), else the container
  runtime's "executable file not found"; the exit code as the kubelet reports it.
- `attach`: the container's log (`logs.py`), then the end of the stream.
- `port-forward`: kubectl 1.37 tunnels SPDY/3.1 in its WebSocket (subprotocol
  `SPDY/3.1+portforward.k8s.io`); the gateway speaks it (`spdy.py`, `portforward.py`) and answers each
  forwarded connection from the twin (`pod_ports.py`): the declared HTTP answer for the pod and port,
  else 200/503 from the pod's readiness for a port a running container declares, else the runtime's
  "connection refused" on the error stream. No socket is opened. The plain SPDY upgrade (kubectl's
  fallback when the WebSocket upgrade fails) is not served: the WebSocket one never fails here.

The record's response line holds what was served: the command's argv, container, stdout, stderr and exit
code (`response_body`), so the engine reads an `exec pod/<name>` action and what the agent was shown; for
a port-forward, each forwarded connection's port, what answered and each request seen, written as the
session goes (the last line wins) so it is there while kubectl still runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import aiohttp
from aiohttp import WSMsgType, web

from oasis_operator.gateway.apis.channels import (
    EXEC_PROTOCOLS,
    PORT_FORWARD_TUNNEL,
    STDERR,
    STDOUT,
    chosen,
    output_frames,
    status_frame,
)
from oasis_operator.gateway.apis.container_view import container_view, referenced, source_data
from oasis_operator.gateway.apis.exec_shell import ExecResult, answer
from oasis_operator.gateway.apis.logs import PodLogs, agent_may, pick_container
from oasis_operator.gateway.apis.pod_ports import PortAnswer, port_answer
from oasis_operator.gateway.apis.portforward import PortForwardSession
from oasis_operator.gateway.entries import completion
from oasis_operator.gateway.kubeproxy import CURRENT_SEQ, STREAM_RECORDED_KEY, Outcome
from oasis_operator.gateway.recorder import RecordUnavailableError
from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.gateway.state import EnvState
from oasis_operator.gateway.status import forbidden_message, status_document
from oasis_operator.gateway.upstream import Upstream

SERVED_NOTE = "served by the gateway: nothing forwarded, no command run"
FORWARD_NOTE = "served by the gateway: nothing forwarded, no connection made"
# How often a port-forward session re-reads its pod (a stimulus may change its readiness meanwhile).
POD_REFRESH = 1.0
# How many times a session writes its response line before it ends (each change, up to this).
MAX_PROGRESS_LINES = 100
# How long the gateway waits for the client's close after its own (then the connection goes).
CLOSE_TIMEOUT = 5.0
_VERB_WORDS = {"exec": "exec into", "attach": "attach"}


class PodConnect:
    """Serves granted `…/pods/<name>/exec`, `/attach` and `/portforward` for one gateway."""

    def __init__(self, upstream: Upstream, logs: PodLogs) -> None:
        self.upstream = upstream
        self.logs = logs

    async def __call__(self, request: web.Request, state: EnvState, info: RequestInfo) -> Outcome:
        sub = info.subresource.split("/", 1)[0]
        sandbox_ns = state.names.sandbox_namespace(info.namespace)
        if not await agent_may(self.upstream, state, sandbox_ns, "create", sub, info.name):
            message = forbidden_message(
                state.env.agent.username, "create", "pods", "", info.namespace, info.name, sub
            )
            return _status(
                403, message, info.name, "refused: RBAC (the grant holds in the agent's zone only)"
            )
        code, pod = await self.upstream.get_json(f"/api/v1/namespaces/{sandbox_ns}/pods/{info.name}")
        if code != 200 or not isinstance(pod, dict):
            return _status(404, f'pods "{info.name}" not found', info.name)
        if sub == "portforward":
            return await self._port_forward(request, state, info, pod)
        container, refusal = pick_container(pod, request.query.get("container", ""), info.name)
        refusal = refusal or _not_running(pod, container, info.name, sub)
        if refusal:
            return _status(400, refusal, info.name)
        protocol = chosen(request.headers.get("Sec-WebSocket-Protocol", ""))
        if request.headers.get("Upgrade", "").lower() != "websocket" or protocol is None:
            message = (
                f"{sub} is served over WebSocket only, with subprotocol {' or '.join(EXEC_PROTOCOLS)}; "
                "SPDY/3.1 is not supported"
            )
            return _status(400, message, info.name, f"{sub}: the client offered no served protocol")
        if sub == "attach":
            text, _ = await self.logs.text(state, pod, container, info.namespace, {})
            result, source = ExecResult(stdout=text), "log"
            argv: tuple[str, ...] = ()
        else:
            argv = tuple(request.query.getall("command", []))
            result, source = await self._exec(state, pod, info, container, argv)
            route = f"{info.namespace}/{info.name}/{container}"
            result = ExecResult(
                state.response_hook("exec", route, result.stdout), result.stderr, result.exit_code
            )
        served = {
            "container": container,
            **({"command": list(argv)} if sub == "exec" else {}),
            "stdout": result.stdout,
            "stderr": result.stderr,
            "exit_code": result.exit_code,
            "answer": source,
        }
        ws, size = await _stream(request, protocol, request.query, result, argv)
        return Outcome(ws, 101, size, note=SERVED_NOTE, recorded=served)

    async def _exec(
        self, state: EnvState, pod: dict[str, Any], info: RequestInfo, container: str, argv: tuple[str, ...]
    ) -> tuple[ExecResult, str]:
        connect = state.env.connect
        declared = connect.exec_answer(info.name, info.namespace, container, argv) if connect else None
        if declared is not None:
            return ExecResult(declared.stdout, declared.stderr, declared.exit_code), "declared"
        sandbox_ns = str((pod.get("metadata") or {}).get("namespace") or "")
        sources = {}
        for kind, name in sorted(referenced(pod, container)):
            plural = "configmaps" if kind == "configmap" else "secrets"
            code, obj = await self.upstream.get_json(f"/api/v1/namespaces/{sandbox_ns}/{plural}/{name}")
            if code == 200 and isinstance(obj, dict):
                sources[(kind, name)] = source_data(kind, obj)
        result = answer(argv, container_view(pod, container, sources))
        declared_text = state.names.declared_text
        return ExecResult(
            declared_text(result.stdout), declared_text(result.stderr), result.exit_code
        ), "default"

    async def _port_forward(
        self, request: web.Request, state: EnvState, info: RequestInfo, pod: dict[str, Any]
    ) -> Outcome:
        """The port-forward session: SPDY/3.1 in the WebSocket, every port answered from the twin."""
        if not (pod.get("spec") or {}).get("nodeName"):
            return _status(400, f"pod {info.name} does not have a host assigned", info.name)
        protocol = chosen(request.headers.get("Sec-WebSocket-Protocol", ""), (PORT_FORWARD_TUNNEL,))
        if request.headers.get("Upgrade", "").lower() != "websocket" or protocol is None:
            message = (
                f"port-forward is served over WebSocket only, with subprotocol {PORT_FORWARD_TUNNEL}; "
                "the plain SPDY/3.1 upgrade is not supported"
            )
            return _status(400, message, info.name, "port-forward: the client offered no served protocol")
        sandbox_path = f"/api/v1/namespaces/{state.names.sandbox_namespace(info.namespace)}/pods/{info.name}"
        current, fetched = pod, time.monotonic()

        def answer_for(port: int) -> PortAnswer | str:
            return port_answer(state.env.connect, current, info.name, info.namespace, port)

        session = PortForwardSession(answer_for)
        ws = web.WebSocketResponse(protocols=(protocol,), timeout=CLOSE_TIMEOUT, heartbeat=30.0)
        await ws.prepare(request)
        size, written, lines = 0, 0, 0

        def record_so_far(note: str = FORWARD_NOTE) -> None:
            """Write the response line as it stands (the last one written wins), so the record holds
            the session while kubectl still runs, and if the gateway stops first."""
            nonlocal written, lines
            seq = CURRENT_SEQ.get()
            if seq is None or (written == session.changes and note == FORWARD_NOTE):
                return
            written, lines = session.changes, lines + 1
            done = completion(101, size, note, "create", None, None, session.record())
            with contextlib.suppress(RecordUnavailableError):
                state.recorder.complete(seq, done)
                request[STREAM_RECORDED_KEY] = True

        try:
            async for received in ws:
                if received.type != WSMsgType.BINARY:
                    failed = received.type == WSMsgType.ERROR
                    session.error = (
                        f"the WebSocket failed: {ws.exception()}"
                        if failed
                        else ("the client sent a non-binary message in the SPDY tunnel")
                    )
                    break
                if time.monotonic() - fetched > POD_REFRESH:
                    fetched = time.monotonic()
                    with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                        code, fresh = await self.upstream.get_json(sandbox_path)
                        current = fresh if code == 200 and isinstance(fresh, dict) else current
                for data in session.receive(received.data):
                    await ws.send_bytes(data)
                    size += len(data)
                if lines < MAX_PROGRESS_LINES:
                    record_so_far()
                if session.closed:
                    break
            await ws.close()
        except (ConnectionResetError, RuntimeError):
            pass  # the client went away; the record keeps what was served
        except asyncio.CancelledError:
            record_so_far(f"{FORWARD_NOTE}; the session was cut when the gateway stopped")
            raise
        return Outcome(ws, 101, size, note=FORWARD_NOTE, recorded=session.record())


def _not_running(pod: dict[str, Any], container: str, name: str, sub: str) -> str | None:
    """The refusal for a pod or container that cannot take a stream now, else None."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return f"pod {name} does not have a host assigned"
    phase = (pod.get("status") or {}).get("phase")
    if phase in {"Succeeded", "Failed"}:
        return f"cannot {_VERB_WORDS.get(sub, sub)} a container in a completed pod; current phase is {phase}"
    status = pod.get("status") or {}
    for group in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for item in status.get(group) or []:
            if isinstance(item, dict) and item.get("name") == container:
                return (
                    None if "running" in (item.get("state") or {}) else f'container not found ("{container}")'
                )
    return f'container not found ("{container}")'


async def _stream(
    request: web.Request, protocol: str, query: Any, result: ExecResult, argv: tuple[str, ...]
) -> tuple[web.WebSocketResponse, int]:
    """Upgrade, send stdout, stderr and the status on their channels, close; the bytes sent."""
    ws = web.WebSocketResponse(protocols=(protocol,), timeout=CLOSE_TIMEOUT, autoping=True)
    await ws.prepare(request)
    tty = query.get("tty", "").lower() in {"1", "true"}
    wants = {
        c: query.get(k, "").lower() in {"1", "true"} for c, k in ((STDOUT, "stdout"), (STDERR, "stderr"))
    }
    messages = []
    if wants[STDOUT] or tty:
        messages += output_frames(STDOUT, result.stdout + (result.stderr if tty else ""), tty)
    if wants[STDERR] and not tty:
        messages += output_frames(STDERR, result.stderr)
    messages.append(status_frame(result.exit_code, argv))
    size = 0
    try:
        reader = asyncio.create_task(_drain(ws))
        for message in messages:
            await ws.send_bytes(message)
            size += len(message)
        await ws.close()
        reader.cancel()
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away; the record keeps what was served
    return ws, size


async def _drain(ws: web.WebSocketResponse) -> None:
    """Read (and drop) what the client sends: stdin, resizes, its close of stdin (v5); no command
    reads them."""
    async for _ in ws:
        pass


def _status(code: int, message: str, name: str, note: str = "") -> Outcome:
    body = json.dumps(status_document(code, message, {"name": name, "kind": "pods"})).encode()
    response = web.Response(status=code, body=body, content_type="application/json")
    return Outcome(response, code, len(body), note=note)
