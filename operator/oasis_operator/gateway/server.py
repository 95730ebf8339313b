"""The agent gateway of one sandbox cluster: one door per environment, every request recorded first.

Served by its own `Listener` (listener.py) or by the operator's shared one (the chart's one Service).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from aiohttp import web

from oasis_operator.gateway.apis import ApiHandler, install_apis
from oasis_operator.gateway.attribution import (
    Attribution,
    Credential,
    attribute,
    presented_credential,
    split_door,
    token_key,
)
from oasis_operator.gateway.config import DEFAULT_GATEWAY_CONFIG, GatewayConfig
from oasis_operator.gateway.credentials import AgentCredentials, build_kubeconfig, endpoints_for, new_token
from oasis_operator.gateway.doortls import ask_client_certificates, sandbox_ca_pem
from oasis_operator.gateway.entries import api_of, completion, request_entry, request_facts
from oasis_operator.gateway.guards import Refusal, body_too_large, malformed_path, read_body
from oasis_operator.gateway.kubeproxy import (
    CURRENT_SEQ,
    STREAM_RECORDED_KEY,
    TAIL_KEY,
    KubeProxy,
    Outcome,
    PodLogHandler,
)
from oasis_operator.gateway.listener import MAX_REQUEST_BODY, Listener
from oasis_operator.gateway.mcp import MCP_PATH, McpDoors, mcp_unauthorized
from oasis_operator.gateway.ratelimit import TokenBucket, too_many_requests
from oasis_operator.gateway.recorder import (
    RECORD_FILE,
    Completion,
    GatewayRecord,
    Recorder,
    RecordUnavailableError,
    read_record,
    unreachable,
)
from oasis_operator.gateway.requestinfo import parse_request
from oasis_operator.gateway.state import EnvState
from oasis_operator.gateway.status import status_document
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.gateway.stimulus_runner import StimulusRunner
from oasis_operator.gateway.tls import own_tls, serving_names
from oasis_operator.gateway.upstream import Upstream, gateway_kubeconfig, load_upstream
from oasis_operator.gateway.virtual import NameMap
from oasis_operator.models.environment import Environment
from oasis_operator.models.evidence import AuditEntry

log = logging.getLogger(__name__)

__all__ = ["MAX_REQUEST_BODY", "Gateway"]


class Gateway:
    """The agent gateway. `await start()`, `register(env)` per environment, `revoke(env_id)` when its
    agent is done, `release(env_id)` once its evidence is read.

    `config`: how it listens, what it serves and allows (`GatewayConfig`, checked when made).
    `listener`: a shared listener to be served by (the operator's one door; `host`, `port`,
    `public_url` and `tls` are then its own); None: the gateway listens itself as `config` says.
    """

    def __init__(
        self,
        sandbox_kubeconfig: Path,
        data_dir: Path,
        config: GatewayConfig = DEFAULT_GATEWAY_CONFIG,
        *,
        listener: Listener | None = None,
    ) -> None:
        if not isinstance(config, GatewayConfig):
            raise TypeError(f"config must be a GatewayConfig, not {type(config).__name__}")
        self.config = config
        self.data_dir = data_dir
        # Records, keys and tokens of every environment: closed to every other user (agents run as one).
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        data_dir.chmod(0o700)
        self.rate_limit = config.rate_limit
        self.max_body_bytes = config.max_body_bytes
        self.public_url = config.public_url
        self.identity = gateway_kubeconfig(sandbox_kubeconfig, config.identity)
        self._upstream = Upstream(load_upstream(self.identity))
        self.kube = KubeProxy(self._upstream)
        self._envs: dict[str, EnvState] = {}
        self._by_token: dict[bytes, str] = {}  # token digest -> environment id (revoked ones too)
        self._released: set[str] = set()  # finished environments: only their id and token are kept
        self._stray: Recorder | None = None
        self._apis: dict[str, ApiHandler] = {}
        # The MCP server of each environment, whose tool calls come back in through the private socket.
        self.mcp = McpDoors(data_dir)
        self._shared = listener is not None
        if listener is None:
            host, public_url = config.host, config.public_url
            hosts = [h for h in (public_url, host) if h and h not in ("0.0.0.0", "::")]  # noqa: S104
            tls = config.tls or own_tls(data_dir / "tls", serving_names(None, None, hosts))
            listener = Listener(tls, host, config.port, public_url, config.max_body_bytes)
        self.listener = listener
        # Client certificates are asked for (never required) so a borrowed one is fingerprinted
        # (doortls.py): those of this sandbox API server's CA and of the gateway's own CA are trusted.
        sandbox_ca = sandbox_ca_pem(sandbox_kubeconfig)
        anchors = (listener.tls.ca_pem.decode(), *((sandbox_ca,) if sandbox_ca else ()))
        ask_client_certificates(listener.tls.context, anchors)
        if config.builtin_apis:
            install_apis(self)

    def register_api(self, name: str, handler: ApiHandler) -> None:
        """Serve `handler` at /env/<id>/<name>/… for every environment (replaces one of the same name)."""
        self._apis[name] = handler

    def register_kube_extension(
        self,
        *,
        pod_logs: PodLogHandler | None = None,
        resource_metrics: PodLogHandler | None = None,
        api_group: dict[str, Any] | None = None,
        api_resources: dict[str, Any] | None = None,
        pod_connect: PodLogHandler | None = None,
    ) -> None:
        """Answer pod logs and/or metrics.k8s.io from declared state; list `api_group` in discovery;
        serve the exec, attach and port-forward a scenario grants (`pod_connect`)."""
        if pod_logs is not None:
            self.kube.pod_logs = pod_logs
        if pod_connect is not None:
            self.kube.pod_connect = pod_connect
        if resource_metrics is not None:
            self.kube.resource_metrics = resource_metrics
        if api_group is not None:
            self.kube.served_groups.add(api_group, api_resources)

    @property
    def upstream(self) -> Upstream:
        """The connection to the sandbox API server (as the gateway)."""
        return self._upstream

    @property
    def ca_cert(self) -> Path:
        """The CA that verifies the gateway's serving certificate (embedded in every kubeconfig)."""
        return self.listener.tls.ca_cert

    @property
    def host(self) -> str:
        return self.listener.host if self._shared else self.config.host

    @property
    def port(self) -> int:
        """The listening port (known after `start()` when 0 was asked for)."""
        return self.listener.port

    @property
    def url(self) -> str:
        """The base URL agents are given: the listener's public URL (a Service or Ingress) if set, else
        its listening address."""
        return self.listener.url

    async def start(self) -> None:
        """Connect upstream and be served: mounted on the shared listener, or listening on host:port."""
        await self._upstream.start()
        self._stray = Recorder(self.data_dir / "unmatched")
        self.listener.mount(self)
        if not self._shared:
            await self.listener.start()
        await self.mcp.serve_socket(self.handle, self.max_body_bytes)

    async def stop(self) -> None:
        """Stop being served (and listening, when the listener is its own) and close the upstream."""
        await self.mcp.stop()
        self.listener.unmount(self)
        if not self._shared:
            await self.listener.stop()
        await self._upstream.stop()

    def owns_token(self, key: bytes) -> bool:
        """`key` (token_key of a bearer token) is the token of one of this gateway's environments."""
        return key in self._by_token

    def has_environment(self, env_id: str) -> bool:
        return env_id in self._envs or env_id in self._released

    # ---- environments -----------------------------------------------------------------------------

    def register(self, env: Environment, token: str | None = None) -> AgentCredentials:
        """Open a door for `env`: a fresh token (or `token`, moved here from the environment it served
        before), a kubeconfig and the tool endpoints."""
        server = f"{self.url}/env/{env.id}"
        names = NameMap(env)
        token = token or new_token()
        recorder = Recorder(self.data_dir / env.id)
        limiter = TokenBucket(self.rate_limit) if self.rate_limit is not None else None
        self._envs[env.id] = EnvState(env=env, token=token, names=names, recorder=recorder, limiter=limiter)
        self._by_token[token_key(token)] = env.id
        extra = tuple(sorted({"runbooks"} & {f.kind + "s" for f in env.fixtures}))
        return AgentCredentials(
            env_id=env.id,
            token=token,
            server=server,
            kubeconfig_yaml=build_kubeconfig(server, self.ca_cert, token, names.home_namespace),
            endpoints={**endpoints_for(server, env.tools, extra), "mcp": f"{server}{MCP_PATH}"},
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
            self.mcp.closing(env_id)

    def release(self, env_id: str) -> None:
        """Forget a finished environment's live state, revoked first; its id and token stay known, so a
        later request with them is refused (401) and recorded in its record (`evidence` reads it)."""
        self.revoke(env_id)
        if self._envs.pop(env_id, None) is not None:
            self._released.add(env_id)

    def evidence(self, env_id: str) -> GatewayRecord:
        """The environment's record as evidence, read once: the audit log (`unreachable` when storage
        failed or a line is corrupt, never empty) and the stimuli that fired."""
        state = self._envs.get(env_id)
        if state is not None and state.recorder.fault:
            return unreachable(state.recorder.fault)
        if state is not None:
            return state.recorder.read()
        return read_record(self.data_dir / env_id / RECORD_FILE)

    def audit_entries(self, env_id: str) -> list[AuditEntry]:
        """The recorded requests of an environment; raises if the record is unreachable."""
        record = self.evidence(env_id)
        if not record.available:
            raise RecordUnavailableError(record.reason)
        return record.entries

    def unmatched_entries(self) -> list[AuditEntry]:
        """The shared record of requests attributable to no environment (no door, no environment's token)."""
        record = read_record(self.data_dir / "unmatched" / RECORD_FILE)
        if not record.available:
            raise RecordUnavailableError(record.reason)
        return record.entries

    # ---- requests ---------------------------------------------------------------------------------

    def _attribute(self, door: str | None, credential: Credential | None) -> Attribution:
        """Whose request this is: the owner of its token (revoked and released ones included) or door."""
        key = credential.token_key if credential is not None else None
        owner = self._by_token.get(key) if key is not None else None
        live = self._envs.get(owner) if owner is not None else None
        known_door = door is not None and self.has_environment(door)
        return attribute(door, credential, owner, live is None or live.revoked, known_door)

    def _recorder(self, env_id: str | None) -> Recorder | None:
        """Where a request attributed to `env_id` is recorded: its record (a released environment's is
        opened again for it), else the shared record of unmatched requests."""
        if env_id is not None and (state := self._envs.get(env_id)) is not None:
            return state.recorder
        if env_id is not None and env_id in self._released:
            return Recorder(self.data_dir / env_id)
        return self._stray

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Every request: attributed by its credential (attribution.py), recorded first, then answered."""
        door, tail = split_door(request.path)
        _, raw_tail = split_door(request.rel_url.raw_path)
        request[TAIL_KEY] = tail
        read = await read_body(request, self.max_body_bytes)
        body = read or b""
        who = self._attribute(door, presented_credential(request))
        state = self._envs.get(who.env_id) if who.env_id is not None else None
        api, sub = api_of(tail, self._apis)
        query = request.rel_url.raw_query_string
        info = parse_request(request.method, tail, query)
        malformed = malformed_path(tail, raw_tail)
        # Below the door when it is the environment's own; whole otherwise (the door says something).
        path = raw_tail if door is not None and door == who.env_id else request.rel_url.raw_path
        facts = request_facts(request, path, body, (api, sub), None if malformed else info)
        recorder = self._recorder(who.env_id)
        user = state.env.agent.username if state is not None else ""
        entry = request_entry(facts, who, state.names if state else None, user)
        if not who.serve or state is None:
            return self._unauthorized(recorder, entry, who.note, mcp=tail.rstrip("/") == MCP_PATH)
        if door == state.env.id and tail.rstrip("/") == MCP_PATH:
            return await self._serve_mcp(request, state, read)
        try:
            seq = state.recorder.begin(entry)
        except RecordUnavailableError:
            doc = status_document(503, "the gateway cannot record requests; try again later")
            return web.Response(status=503, body=json.dumps(doc).encode(), content_type="application/json")
        CURRENT_SEQ.set(seq)
        if at_door := self._refused_at_door(state, malformed, read is None):
            refused, headers = at_door
            payload = json.dumps(refused.document).encode()
            self._complete(state, seq, Completion(refused.code, len(payload), refused.note))
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
                outcome = await self._apis[api](request, state, sub, body)
        except asyncio.CancelledError:
            if not request.get(STREAM_RECORDED_KEY):  # else its last response line stands
                self._complete(state, seq, Completion(499, 0, "cancelled before an answer"))
            raise
        except Exception as exc:  # any failure is answered as one and recorded, never lost
            log.exception("gateway request failed env=%s path=%s", state.env.id, tail)
            note = f"{type(exc).__name__}: {exc}"
            payload = json.dumps(status_document(502, "the API server could not be reached")).encode()
            outcome = Outcome(
                web.Response(status=502, body=payload, content_type="application/json"), 502, len(payload)
            )
        done = completion(
            outcome.code,
            outcome.size,
            note or outcome.note,
            entry.verb,
            outcome.document,
            outcome.served,
            outcome.recorded,
        )
        self._complete(state, seq, done)
        if state.stimuli is not None:
            await state.stimuli.after(api, info, outcome.code)
        return outcome.response

    async def _serve_mcp(
        self, request: web.Request, state: EnvState, body: bytes | None
    ) -> web.StreamResponse:
        """The environment's MCP server. Transport only, not recorded: each tool call comes back in
        through this door as the agent's own request, and is recorded then."""
        if body is None:
            refused = body_too_large(self.max_body_bytes)
            return web.json_response(refused.document, status=refused.code)
        return await self.mcp.handle(request, state, body)

    def _unauthorized(
        self, recorder: Recorder | None, entry: AuditEntry, note: str, mcp: bool = False
    ) -> web.Response:
        """401 for a request that is not served; recorded in the record it was attributed to. At an
        MCP endpoint the body is a JSON-RPC error, which MCP clients show to their user."""
        doc = mcp_unauthorized() if mcp else status_document(401, "Unauthorized")
        payload = json.dumps(doc).encode()
        if recorder is not None:
            try:
                seq = recorder.begin(entry)
                recorder.complete(seq, Completion(401, len(payload), note))
            except RecordUnavailableError:
                log.warning("gateway record unavailable for a refused request path=%s", entry.path)
        return web.Response(status=401, body=payload, content_type="application/json")

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

    def _complete(self, state: EnvState, seq: int, done: Completion) -> None:
        try:
            state.recorder.complete(seq, done)
        except RecordUnavailableError:
            log.exception("gateway record became unavailable env=%s", state.env.id)
