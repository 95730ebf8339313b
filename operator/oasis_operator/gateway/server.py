"""The agent gateway: one HTTPS server, one door per environment, every request recorded first."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from oasis_operator.gateway.credentials import AgentCredentials, build_kubeconfig, endpoints_for, new_token
from oasis_operator.gateway.fixtures import install_fixture_apis
from oasis_operator.gateway.guards import Refusal, body_too_large, malformed_path, read_body
from oasis_operator.gateway.kubeproxy import CURRENT_SEQ, KubeProxy, Outcome
from oasis_operator.gateway.ratelimit import DEFAULT_RATE_LIMIT, RateLimit, TokenBucket, too_many_requests
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
# Larger than any object the API server stores (etcd's limit is ~1.5 MiB), small enough to stop a flood.
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
    """The agent gateway. `await start()`, `register(env)` per environment, `revoke(env_id)` at teardown.

    `rate_limit` applies to each environment separately (None: no limit); `max_body_bytes` to every
    request body. Requests over either are answered 429 / 413 and recorded like every other request.
    """

    def __init__(
        self,
        sandbox_kubeconfig: Path,
        data_dir: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        fixture_apis: bool = True,
        rate_limit: RateLimit | None = DEFAULT_RATE_LIMIT,
        max_body_bytes: int = MAX_REQUEST_BODY,
        public_url: str | None = None,
    ) -> None:
        if not isinstance(max_body_bytes, int) or isinstance(max_body_bytes, bool) or max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be a positive number of bytes, not {max_body_bytes!r}")
        if rate_limit is not None and not isinstance(rate_limit, RateLimit):
            raise TypeError(f"rate_limit must be a RateLimit or None, not {type(rate_limit).__name__}")
        self.data_dir = data_dir
        # Records, keys and tokens of every environment: closed to every other user (agents run as one).
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        data_dir.chmod(0o700)
        self.host = host
        self.port = port
        self.rate_limit = rate_limit
        self.max_body_bytes = max_body_bytes
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
        app = web.Application(client_max_size=self.max_body_bytes)
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
        limiter = TokenBucket(self.rate_limit) if self.rate_limit is not None else None
        self._envs[env.id] = EnvState(env=env, token=token, names=names, recorder=recorder, limiter=limiter)
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
        return read_evidence(path, state.recorder.head if state else None)

    def audit_entries(self, env_id: str) -> list[GatewayAuditEntry]:
        """The recorded requests of an environment; raises if the record is unreachable."""
        evidence = self.evidence(env_id)
        if evidence.status != "available":
            raise RecordUnavailableError(evidence.reason)
        return evidence.entries

    # ---- requests ---------------------------------------------------------------------------------

    async def _handle_unmatched(self, request: web.Request) -> web.StreamResponse:
        body = await read_body(request, self.max_body_bytes) or b""
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
        read = await read_body(request, self.max_body_bytes)
        body = read or b""
        state = self._envs.get(env_id)
        api, sub = _api_of(tail, self.fixture_apis)
        info = parse_request(request.method, tail, request.rel_url.raw_query_string)
        raw_tail = request.rel_url.raw_path.partition(f"/env/{env_id}")[2] or "/"
        fields: dict[str, Any] = {"method": request.method, "path": raw_tail + _query(request), "api": api}
        malformed = malformed_path(tail, raw_tail)
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
        if at_door := self._refused_at_door(state, malformed, read is None):
            refused, headers = at_door
            payload = json.dumps(refused.document).encode()
            self._complete(state, seq, refused.code, len(payload), refused.note)
            return web.Response(
                status=refused.code, body=payload, content_type="application/json", headers=headers
            )
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

    def _refused_at_door(
        self, state: EnvState, malformed: str, too_large: bool
    ) -> tuple[Refusal, dict[str, str]] | None:
        """Requests answered before anything else: over the rate limit, malformed paths, oversized bodies."""
        if state.limiter is not None and (wait := state.limiter.take()) > 0:
            limit = state.limiter.limit
            doc, headers = too_many_requests(limit, wait)
            return Refusal(429, doc, f"refused: rate limit ({limit.describe()})"), headers
        if malformed:
            # Never forwarded: a dot segment or an encoded separator could leave the virtual namespace.
            return Refusal(400, status_document(400, malformed), malformed), {}
        if too_large:
            return body_too_large(self.max_body_bytes), {}
        return None

    def _complete(self, state: EnvState, seq: int, code: int, size: int, note: str) -> None:
        try:
            state.recorder.complete(seq, code, size, note)
        except RecordUnavailableError:
            log.exception("gateway record became unavailable env=%s", state.env.id)


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
