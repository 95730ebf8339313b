"""Forwarding of Kubernetes API requests to the sandbox API server, as the agent's ServiceAccount.

Real RBAC in the sandbox decides every namespaced request. Three kinds of read are answered with the
gateway's own identity and filtered to the environment, because no RBAC rule can express "only this
environment's objects": lists/gets/watches of Namespaces and of the environment's cluster-scoped twin
objects (Nodes, PersistentVolumes), and all-namespaces lists, which are fanned out to the environment's
namespaces as the agent (so RBAC still decides each of them).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from aiohttp import web

from oasis_operator.gateway.discovery import Discovery, ServedGroups
from oasis_operator.gateway.documents import merge_lists, rewrite_body
from oasis_operator.gateway.entries import recorded_document
from oasis_operator.gateway.guards import Refusal, connect_subresource, impersonation_refusal, refusal
from oasis_operator.gateway.protowire import rewrite_protobuf
from oasis_operator.gateway.recorder import Completion, RecordUnavailableError
from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.gateway.scheduling import MARKER, own_nodes_text
from oasis_operator.gateway.state import EnvState
from oasis_operator.gateway.status import forbidden_message, not_found, not_found_named, status_document
from oasis_operator.gateway.upstream import (
    DROPPED_REQUEST_HEADERS,
    Upstream,
    forwarded_accept,
    impersonation_headers,
    json_accept,
)
from oasis_operator.gateway.virtual import (
    CLUSTER_OBJECT_KINDS,
    hidden_row,
    is_sandbox_credential,
    object_name,
    provider_object_filter,
    single_object,
)
from oasis_operator.sandbox.twin.resources import POOL_KEY

Keep = Callable[[dict[str, Any]], bool]
# The record sequence number of the request being answered (each request runs in its own task).
CURRENT_SEQ: contextvars.ContextVar[int | None] = contextvars.ContextVar("gateway_record_seq", default=None)
# Where the server keeps the path below the door (or the whole path of a request with no door).
TAIL_KEY = web.RequestKey("gateway_tail", str)
# A stream served for a while (port-forward) wrote its response line as it went: a cancel keeps it.
STREAM_RECORDED_KEY = web.RequestKey("gateway_stream_recorded", bool)
# A `get` by name: a Table answer whose one row is hidden is then a 404 for that name.
NAMED_GET_KEY = web.RequestKey("gateway_named_get", RequestInfo)
PodLogHandler = Callable[[web.Request, EnvState, RequestInfo], Awaitable["Outcome"]]


@dataclass
class Outcome:
    """What the agent got: the response (already sent for streams) and its size in bytes."""

    response: web.StreamResponse
    code: int
    size: int
    note: str = ""
    # The JSON document the agent got (declared names), when the record needs it (objects, not lists).
    document: Any = None
    # The declared entries a fixture API's answer was drawn from (`<kind>/<name>`); None for the API server.
    served: tuple[str, ...] | None = None
    # What the gateway served itself on a stream (an exec's command and output), recorded as the answer.
    recorded: Any = None


def door_tail(request: web.Request) -> str:
    """The request's path below its door ("/api/v1/..."), whether or not it came through one."""
    tail: str = request.get(TAIL_KEY, request.path)
    return tail


class KubeProxy:
    """Answers one agent request to the Kubernetes API."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.discovery = Discovery(upstream)
        self.pod_logs: PodLogHandler | None = None
        self.resource_metrics: PodLogHandler | None = None  # metrics.k8s.io, served from declared usage
        self.pod_connect: PodLogHandler | None = None  # exec/attach/port-forward a scenario grants
        self.served_groups = ServedGroups()  # added to discovery

    async def handle(self, request: web.Request, state: EnvState, info: RequestInfo, body: bytes) -> Outcome:
        names = state.names
        if impersonating := _impersonation_asked(request):
            return await self._refused(
                request, state, impersonation_refusal(state.env.agent.username, impersonating)
            )
        tail = door_tail(request).rstrip("/")
        if self.resource_metrics and (info.api_group == "metrics.k8s.io" or tail == "/apis/metrics.k8s.io"):
            return await self.resource_metrics(request, state, info)
        if not info.is_resource:
            tail = door_tail(request)
            query = request.rel_url.raw_query_string
            return await self._forward(request, state, tail + (f"?{query}" if query else ""), body)
        granted = _granted(state) if self.pod_connect else frozenset()
        if refused := refusal(info, state.env.agent.username, body, granted):
            return await self._refused(request, state, refused)
        if self.pod_connect and connect_subresource(info):  # granted: served here, never forwarded
            return await self.pod_connect(request, state, info)
        keep = provider_object_filter(info) if info.is_read else None
        if info.verb == "get" and info.name:
            request[NAMED_GET_KEY] = info
        answer = await self._answer_specially(request, state, info, keep)
        if answer is not None:
            return answer
        if body and "protobuf" in (request.content_type or ""):
            body = rewrite_protobuf(body, names.translate_exact)
        elif body:
            body = rewrite_body(body, request.content_type or "", names)
        path_qs = _path_qs(names.request_info(info), request, names)
        return await self._forward(request, state, path_qs, body, keep)

    async def _answer_specially(
        self, request: web.Request, state: EnvState, info: RequestInfo, keep: Keep | None
    ) -> Outcome | None:
        """Pod logs, cluster-scoped reads and all-namespaces reads; None for plain forwarding."""
        names = state.names
        if info.resource == "pods" and info.subresource == "log" and info.verb == "get" and self.pod_logs:
            return await self.pod_logs(request, state, info)

        sandbox = names.request_info(info)
        if info.resource == "namespaces" and info.subresource in {"", "status"} and info.is_read:
            return await self._as_gateway(request, state, sandbox, _by_name(names.sandbox_namespaces))
        kind = CLUSTER_OBJECT_KINDS.get(info.resource)
        gateway_read = info.is_read and info.subresource in {"", "status"}
        if kind and gateway_read and not info.namespace and not info.api_group:
            return await self._as_gateway(request, state, sandbox, _by_name(names.sandbox_objects(kind)))
        all_namespaces = not info.namespace and info.verb in {"list", "watch"}
        if not (all_namespaces and await self.discovery.namespaced(info.prefix, info.resource)):
            return None
        if info.verb == "list":
            return await self._fan_out(request, state, info, keep)
        return await self._fan_out_watch(request, state, info, keep)

    # ---- decisions --------------------------------------------------------------------------------

    async def _refused(self, request: web.Request, state: EnvState, refused: Refusal) -> Outcome:
        """Answer a request the gateway refuses itself (see guards.py); the note goes into the record."""
        outcome = await self._reply(request, state, refused.code, refused.document)
        outcome.note = refused.note
        if "upgrade" in request.headers.get("Connection", "").lower():
            outcome.response.force_close()  # what follows on the connection was meant for the stream
        return outcome

    # ---- upstream calls ---------------------------------------------------------------------------

    def _headers(
        self, request: web.Request, state: EnvState | None, accept: Callable[[str], str] | None = json_accept
    ) -> list[tuple[str, str]]:
        headers = [
            (k, v)
            for k, v in request.headers.items()
            if k.lower() not in DROPPED_REQUEST_HEADERS and not k.lower().startswith("impersonate-")
        ]
        if accept is not None:  # the forms of a document the gateway can filter
            headers = [(k, v) for k, v in headers if k.lower() != "accept"]
            headers.append(("Accept", accept(request.headers.get("Accept", "application/json"))))
        headers.append(("Accept-Encoding", "identity"))
        if state is not None:
            headers += impersonation_headers(state.env.agent)
        return headers

    async def _forward(
        self, request: web.Request, state: EnvState, path_qs: str, body: bytes, keep: Keep | None = None
    ) -> Outcome:
        if not path_qs.startswith("/"):
            path_qs = "/" + path_qs
        headers = self._headers(request, state, forwarded_accept(path_qs))
        if body and not any(k.lower() == "content-type" for k, _ in headers):
            # The API server reads a body without a type as JSON; the HTTP client would call it binary.
            headers.append(("Content-Type", "application/json"))
        watch = _is_watch(request)
        async with self.upstream.request(
            request.method, path_qs, headers, body or None, timeout=None if watch else 120.0
        ) as resp:
            if watch and resp.status == 200:
                return await self._stream(request, state, resp, keep)
            raw = await resp.read()
            content_type = resp.headers.get("Content-Type", "")
            return await self._finish(request, state, resp.status, content_type, raw, keep)

    async def _as_gateway(
        self, request: web.Request, state: EnvState, sandbox: RequestInfo, keep: Keep
    ) -> Outcome:
        headers = self._headers(request, None)
        path_qs = _path_qs(sandbox, request, state.names)
        watch = sandbox.is_watch
        async with self.upstream.request(
            "GET", path_qs, headers, None, timeout=None if watch else 60.0
        ) as resp:
            if watch and resp.status == 200:
                return await self._stream(request, state, resp, keep)
            raw = await resp.read()
            return await self._finish(
                request, state, resp.status, resp.headers.get("Content-Type", ""), raw, keep
            )

    async def _fan_out(
        self, request: web.Request, state: EnvState, info: RequestInfo, keep: Keep | None
    ) -> Outcome:
        headers = self._headers(request, state)
        merged: dict[str, Any] | None = None
        content_type = "application/json"
        for sandbox_ns in sorted(state.names.sandbox_namespaces):
            path_qs = _path_qs(info.with_namespace(sandbox_ns), request, state.names)
            async with self.upstream.request("GET", path_qs, headers, None) as resp:
                if resp.status != 200:
                    continue
                content_type = resp.headers.get("Content-Type", content_type)
                doc = json.loads(await resp.read())
            merged = merge_lists(merged, doc)
        if merged is None:
            message = forbidden_message(state.env.agent.username, "list", info.resource, info.api_group, "")
            return await self._reply(
                request, state, 403, status_document(403, message, {"kind": info.resource})
            )
        return await self._finish(request, state, 200, content_type, json.dumps(merged).encode(), keep)

    async def _fan_out_watch(
        self, request: web.Request, state: EnvState, info: RequestInfo, keep: Keep | None
    ) -> Outcome:
        """An all-namespaces watch: one watch per environment namespace, merged into one stream."""
        headers = self._headers(request, state)
        async with contextlib.AsyncExitStack() as stack:
            streams = []
            for sandbox_ns in sorted(state.names.sandbox_namespaces):
                path_qs = _path_qs(info.with_namespace(sandbox_ns), request, state.names)
                resp = await stack.enter_async_context(
                    self.upstream.request("GET", path_qs, headers, None, timeout=None)
                )
                if resp.status == 200:
                    streams.append(resp)
            if not streams:
                message = forbidden_message(
                    state.env.agent.username, "watch", info.resource, info.api_group, ""
                )
                doc = status_document(403, message, {"kind": info.resource})
                return await self._reply(request, state, 403, doc)
            response = web.StreamResponse(status=200)
            response.headers["Content-Type"] = streams[0].headers.get("Content-Type", "application/json")
            await response.prepare(request)
            _stream_opened(request, state)
            queue: asyncio.Queue[bytes | None] = asyncio.Queue()

            async def pump(resp: Any) -> None:
                try:
                    async for line in resp.content:
                        await queue.put(line)
                finally:
                    await queue.put(None)

            tasks = [asyncio.create_task(pump(r)) for r in streams]
            size = 0
            try:
                open_streams = len(tasks)
                while open_streams:
                    line = await queue.get()
                    if line is None:
                        open_streams -= 1
                        continue
                    own_nodes = await self._own_nodes(state) if MARKER.encode() in line else None
                    out = self._watch_line(state, line, keep, own_nodes)
                    if out:
                        await response.write(out)
                        size += len(out)
                await response.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass  # the agent hung up
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            return Outcome(response, 200, size)

    # ---- responses --------------------------------------------------------------------------------

    def _rewrite(
        self,
        state: EnvState,
        code: int,
        raw: bytes,
        content_type: str,
        keep: Keep | None,
        named: RequestInfo | None = None,
        own_nodes: tuple[int, int] | None = None,
    ) -> tuple[int, bytes]:
        if not _is_text(content_type):
            return code, raw  # protobuf OpenAPI documents and the like carry no names; pass them intact
        text = raw.decode("utf-8", errors="replace")
        if "json" in content_type:
            try:
                doc = json.loads(text)
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                doc = self.served_groups.clean(doc)
                if is_sandbox_credential(doc) or (keep is not None and single_object(doc) and not keep(doc)):
                    doc, code = not_found(doc), 404
                elif named is not None and doc.get("kind") == "Table" and hidden_row(doc, named.name, keep):
                    doc, code = not_found_named(named), 404
                text = json.dumps(state.names.response_document(doc, keep), separators=(",", ":"))
        text = state.names.declared_text(text)
        if own_nodes is not None:
            text = own_nodes_text(text, *own_nodes)
        return code, text.encode()

    async def _finish(
        self,
        request: web.Request,
        state: EnvState,
        code: int,
        content_type: str,
        raw: bytes,
        keep: Keep | None = None,
    ) -> Outcome:
        own_nodes = await self._own_nodes(state) if MARKER.encode() in raw else None
        code, body = self._rewrite(
            state, code, raw, content_type, keep, request.get(NAMED_GET_KEY), own_nodes
        )
        if _is_text(content_type):
            route = door_tail(request)
            body = state.response_hook("kubernetes", route, body.decode()).encode()
        response = web.Response(
            status=code, body=body, headers={"Content-Type": content_type or "text/plain"}
        )
        return Outcome(
            response, code, len(body), document=recorded_document(request.method, content_type, body)
        )

    async def _reply(self, request: web.Request, state: EnvState, code: int, doc: dict[str, Any]) -> Outcome:
        body = state.names.declared_text(json.dumps(doc)).encode()
        return Outcome(web.Response(status=code, body=body, content_type="application/json"), code, len(body))

    async def _stream(
        self, request: web.Request, state: EnvState, upstream_resp: Any, keep: Keep | None
    ) -> Outcome:
        response = web.StreamResponse(status=200)
        response.content_type = upstream_resp.headers.get("Content-Type", "application/json").split(";")[0]
        response.headers["Content-Type"] = upstream_resp.headers.get("Content-Type", "application/json")
        await response.prepare(request)
        _stream_opened(request, state)
        size = 0
        try:
            async for line in upstream_resp.content:
                own_nodes = await self._own_nodes(state) if MARKER.encode() in line else None
                out = self._watch_line(state, line, keep, own_nodes)
                if out:
                    await response.write(out)
                    size += len(out)
            await response.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass  # the agent hung up; the record notes how much it received
        return Outcome(response, 200, size)

    async def _own_nodes(self, state: EnvState) -> tuple[int, int]:
        """The environment's own nodes, and how many of them are cordoned now (`gateway.scheduling`)."""
        own = len(state.names.sandbox_objects("Node"))
        selector = quote(f"{POOL_KEY}={state.env.id}")
        headers = [("Accept", "application/json"), ("Accept-Encoding", "identity")]
        async with self.upstream.request(
            "GET", f"/api/v1/nodes?labelSelector={selector}", headers, None
        ) as resp:
            if resp.status != 200:
                return own, 0
            nodes = json.loads(await resp.read()).get("items") or []
        return own, sum(1 for n in nodes if (n.get("spec") or {}).get("unschedulable"))

    def _watch_line(
        self, state: EnvState, line: bytes, keep: Keep | None, own_nodes: tuple[int, int] | None = None
    ) -> bytes:
        if not line.strip():
            return b""
        try:
            event = json.loads(line)
        except ValueError:
            return state.names.declared_text(line.decode(errors="replace")).encode()
        obj = event.get("object") if isinstance(event, dict) else None
        if isinstance(obj, dict) and obj.get("kind") not in {"Table", "Status"}:  # noqa: SIM102
            if is_sandbox_credential(obj) or (keep is not None and not keep(obj)):
                return b""
        doc = state.names.response_document(event, keep)
        if isinstance(obj, dict) and obj.get("kind") == "Table" and not doc["object"].get("rows"):
            return b""
        text = state.names.declared_text(json.dumps(doc, separators=(",", ":")))
        if own_nodes is not None:
            text = own_nodes_text(text, *own_nodes)
        return (text + "\n").encode()


def _stream_opened(request: web.Request, state: EnvState) -> None:
    """Record the answer of a watch as soon as it starts: a stream may stay open until the end of the run."""
    seq = CURRENT_SEQ.get()
    if seq is not None:
        with contextlib.suppress(RecordUnavailableError):  # the closing line will report the fault
            state.recorder.complete(seq, Completion(200, 0, "stream open"))


def _granted(state: EnvState) -> frozenset[str]:
    """The pod subresources the environment's scenario grants (`exec`, `attach`, `portforward`)."""
    connect = state.env.connect
    return connect.subresources() if connect is not None else frozenset()


def _impersonation_asked(request: web.Request) -> str:
    """The identity the agent asked to impersonate, or "" (groups or extras alone count too)."""
    asked = [v for k, v in request.headers.items() if k.lower().startswith("impersonate-")]
    return request.headers.get("Impersonate-User", asked[0] if asked else "")


def _is_text(content_type: str) -> bool:
    return not content_type or "json" in content_type or content_type.startswith("text/")


def _by_name(allowed: frozenset[str]) -> Keep:
    return lambda item: object_name(item) in allowed


def _is_watch(request: web.Request) -> bool:
    return request.query.get("watch", "").lower() in {"1", "true"} or "/watch/" in request.path


def _path_qs(info: RequestInfo, request: web.Request, names: Any) -> str:
    """The sandbox path of `info`, with the agent's query and its selectors translated."""
    params = [
        (key, names.field_selector(value) if key == "fieldSelector" else value)
        for key, value in parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True)
    ]
    if "/watch/" in request.path and not any(k == "watch" for k, _ in params):
        params.append(("watch", "true"))  # the legacy /watch/ prefix, said the current way
    path = info.path()
    return path + ("?" + urlencode(params) if params else "")
