"""The agent gateway: one HTTPS server, one door per environment, every request recorded first."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from oasis_operator.gateway.credentials import AgentCredentials, build_kubeconfig, endpoints_for, new_token
from oasis_operator.gateway.fixtures import install_fixture_apis
from oasis_operator.gateway.kubeproxy import CURRENT_SEQ, KubeProxy, Outcome
from oasis_operator.gateway.recorder import (
    GatewayAuditEntry,
    GatewayEvidence,
    Recorder,
    RecordUnavailableError,
    read_evidence,
)
from oasis_operator.gateway.requestinfo import RequestInfo, parse_request
from oasis_operator.gateway.state import EnvState
from oasis_operator.gateway.status import status_document
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.gateway.stimulus_runner import StimulusRunner
from oasis_operator.gateway.upstream import Upstream, load_upstream
from oasis_operator.gateway.virtual import NameMap
from oasis_operator.localcluster.pki import ensure_pki
from oasis_operator.models.environment import Environment

log = logging.getLogger(__name__)

# A fixture API: (request, environment, path below its prefix, request body) -> outcome.
FixtureHandler = Callable[[web.Request, EnvState, str, bytes], Awaitable[Outcome]]
MAX_RECORDED_BODY = 1 << 20
MAX_REQUEST_BODY = 16 << 20


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _recorded_body(body: bytes, content_type: str = "") -> Any:
    if not body:
        return None
    if "protobuf" in content_type:
        return {"encoding": "protobuf", "base64": base64.b64encode(body[:MAX_RECORDED_BODY]).decode()}
    text = body[:MAX_RECORDED_BODY].decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


class Gateway:
    """The agent gateway. `await start()`, `register(env)` per environment, `revoke(env_id)` at teardown."""

    def __init__(
        self,
        sandbox_kubeconfig: Path,
        data_dir: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        fixture_apis: bool = True,
        public_url: str | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.public_url = public_url
        self._upstream = Upstream(load_upstream(sandbox_kubeconfig))
        self.kube = KubeProxy(self._upstream)
        self._envs: dict[str, EnvState] = {}
        self._stray: Recorder | None = None
        self._runner: web.AppRunner | None = None
        self.fixture_apis: dict[str, FixtureHandler] = {}
        self._pki = ensure_pki(data_dir / "pki")
        if fixture_apis:
            install_fixture_apis(self)

    @property
    def upstream(self) -> Upstream:
        """The connection to the sandbox API server (as the gateway)."""
        return self._upstream

    @property
    def ca_cert(self) -> Path:
        """The CA that signed the gateway's serving certificate (embedded in every kubeconfig)."""
        return self._pki.ca_cert

    @property
    def url(self) -> str:
        """The base URL agents are given: `public_url` if set, else the listening address.

        `public_url` is the address of a Service or Ingress in front of the gateway; the listening port is
        known after `start()` when 0 was asked for.
        """
        if self.public_url:
            return self.public_url.rstrip("/")
        return f"https://{self.host}:{self.port}"

    async def start(self) -> None:
        """Listen on host:port (port 0 picks a free one, readable from `port` afterwards)."""
        await self._upstream.start()
        self._stray = Recorder(self.data_dir / "unmatched")
        app = web.Application(client_max_size=MAX_REQUEST_BODY)
        app.router.add_route("*", "/env/{env_id}{tail:(/.*)?}", self._handle)
        app.router.add_route("*", "/{tail:.*}", self._handle_unmatched)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(self._pki.serving_cert), str(self._pki.serving_key))
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ctx)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        log.info("gateway listening host=%s port=%d url=%s", self.host, self.port, self.url)

    async def stop(self) -> None:
        """Stop listening and close the upstream connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._upstream.stop()

    # ---- environments -----------------------------------------------------------------------------

    def register(self, env: Environment) -> AgentCredentials:
        """Open a door for `env`: a fresh token, a kubeconfig and the tool endpoints."""
        server = f"{self.url}/env/{env.id}"
        names = NameMap(env)
        token = new_token()
        recorder = Recorder(self.data_dir / env.id)
        self._envs[env.id] = EnvState(env=env, token=token, names=names, recorder=recorder)
        extra = tuple(sorted({"runbooks"} & {f.kind + "s" for f in env.fixtures}))
        return AgentCredentials(
            env_id=env.id,
            token=token,
            server=server,
            kubeconfig_yaml=build_kubeconfig(server, self.ca_cert, token, names.home_namespace),
            endpoints=endpoints_for(server, env.tools, extra),
        )

    def attach_stimuli(self, env_id: str, plan: StimulusPlan) -> None:
        """Deliver `plan` to the environment from now on (call when the agent gets its prompt)."""
        state = self._envs[env_id]
        if state.stimuli is not None:
            state.stimuli.disarm()
        runner = StimulusRunner(state, self._upstream, plan)
        state.stimuli = runner
        state.response_hook = runner.response_hook
        runner.arm()

    def state(self, env_id: str) -> EnvState:
        """A registered environment's live state (token, names, record, fixtures as changed by the run)."""
        return self._envs[env_id]

    def revoke(self, env_id: str) -> None:
        """Kill the environment's token: every later request gets 401 (and is still recorded)."""
        state = self._envs.get(env_id)
        if state is not None:
            state.revoked = True
            if state.stimuli is not None:
                state.stimuli.disarm()

    def evidence(self, env_id: str) -> GatewayEvidence:
        """The environment's record as an evidence source; `unreachable` when storage failed."""
        state = self._envs.get(env_id)
        path = state.recorder.path if state else self.data_dir / env_id / "gateway-audit.jsonl"
        if state is not None and state.recorder.fault:
            return GatewayEvidence(status="unreachable", reason=state.recorder.fault)
        return read_evidence(path)

    def audit_entries(self, env_id: str) -> list[GatewayAuditEntry]:
        """The recorded requests of an environment; raises if the record is unreachable."""
        evidence = self.evidence(env_id)
        if evidence.status != "available":
            raise RecordUnavailableError(evidence.reason)
        return evidence.entries

    # ---- requests ---------------------------------------------------------------------------------

    async def _handle_unmatched(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        fields = {"method": request.method, "path": request.path_qs, "authenticated": False, "api": ""}
        return self._unauthorized(self._stray, fields, body)

    def _unauthorized(self, recorder: Recorder | None, fields: dict[str, Any], body: bytes) -> web.Response:
        doc = status_document(401, "Unauthorized")
        payload = json.dumps(doc).encode()
        if recorder is not None:
            try:
                seq = recorder.begin(**fields, request_body=_recorded_body(body))
                recorder.complete(seq, 401, len(payload))
            except RecordUnavailableError:
                log.warning("gateway record unavailable for an unauthenticated request")
        return web.Response(status=401, body=payload, content_type="application/json")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        env_id = request.match_info["env_id"]
        tail = request.match_info.get("tail") or "/"
        body = await request.read()
        state = self._envs.get(env_id)
        api, sub = _api_of(tail, self.fixture_apis)
        info = parse_request(request.method, tail, request.rel_url.raw_query_string)
        raw_tail = request.rel_url.raw_path.partition(f"/env/{env_id}")[2] or "/"
        fields: dict[str, Any] = {"method": request.method, "path": raw_tail + _query(request), "api": api}
        malformed = _malformed_path(tail, raw_tail)
        if api == "kubernetes" and not malformed:
            fields.update(_info_fields(info, state.names if state else None))
        token = _bearer(request)
        if (
            state is None
            or state.revoked
            or token is None
            or not hmac.compare_digest(token.encode(), state.token.encode())
        ):
            return self._unauthorized(
                state.recorder if state else self._stray, {**fields, "authenticated": False}, body
            )
        try:
            seq = state.recorder.begin(**fields, request_body=_recorded_body(body, request.content_type))
        except RecordUnavailableError:
            doc = status_document(503, "the gateway cannot record requests; try again later")
            return web.Response(status=503, body=json.dumps(doc).encode(), content_type="application/json")
        CURRENT_SEQ.set(seq)
        if malformed:
            # Never forwarded: a dot segment or an encoded separator could leave the virtual namespace.
            payload = json.dumps(status_document(400, malformed)).encode()
            self._complete(state, seq, 400, len(payload), malformed)
            return web.Response(status=400, body=payload, content_type="application/json")
        note = ""
        try:
            if state.stimuli is not None:
                await state.stimuli.before(api, info)
            if api == "kubernetes":
                outcome = await self.kube.handle(request, state, info, body)
            else:
                outcome = await self.fixture_apis[api](request, state, sub, body)
        except asyncio.CancelledError:
            self._complete(state, seq, 499, 0, "cancelled before an answer")
            raise
        except Exception as exc:  # any failure is answered as one and recorded, never lost
            log.exception("gateway request failed env=%s path=%s", env_id, tail)
            note = f"{type(exc).__name__}: {exc}"
            payload = json.dumps(status_document(502, "the API server could not be reached")).encode()
            outcome = Outcome(
                web.Response(status=502, body=payload, content_type="application/json"), 502, len(payload)
            )
        self._complete(state, seq, outcome.code, outcome.size, note or outcome.note)
        if state.stimuli is not None:
            await state.stimuli.after(api, info, outcome.code)
        return outcome.response

    def _complete(self, state: EnvState, seq: int, code: int, size: int, note: str) -> None:
        try:
            state.recorder.complete(seq, code, size, note)
        except RecordUnavailableError:
            log.exception("gateway record became unavailable env=%s", state.env.id)


_UNSAFE_SEGMENT = re.compile(r"[?#%\\\s\x00-\x1f]")


def _malformed_path(tail: str, raw_path: str) -> str:
    """Why a path may not be forwarded (dot segments, encoded separators, control characters), or ""."""
    if re.search(r"%(2[fF]|5[cC]|2[eE])", raw_path):
        return "the request path contains an encoded separator or dot"
    for segment in tail.split("/")[1:]:
        if segment in {".", ".."} or _UNSAFE_SEGMENT.search(segment):
            return f"the request path segment {segment!r} is not valid"
    return ""


def _query(request: web.Request) -> str:
    query = request.rel_url.raw_query_string
    return f"?{query}" if query else ""


def _api_of(tail: str, fixture_apis: dict[str, FixtureHandler]) -> tuple[str, str]:
    """Which API a path belongs to: a fixture API's prefix, or the Kubernetes API."""
    first, _, rest = tail.lstrip("/").partition("/")
    if first in fixture_apis:
        return first, "/" + rest
    return "kubernetes", tail


def _info_fields(info: RequestInfo, names: NameMap | None) -> dict[str, Any]:
    sandbox_ns = ""
    if names is not None and info.namespace:
        sandbox_ns = names.sandbox_namespace(info.namespace)
    return {
        "verb": info.verb,
        "api_group": info.api_group,
        "api_version": info.api_version,
        "resource": info.resource,
        "subresource": info.subresource,
        "name": info.name,
        "namespace": info.namespace,
        "sandbox_namespace": sandbox_ns,
        "label_selector": info.label_selector,
        "field_selector": info.field_selector,
    }
