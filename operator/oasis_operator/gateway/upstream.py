"""The gateway's connection to the sandbox API server, impersonating an agent when asked.

The kubeconfig's user authenticates the gateway: a client certificate or a bearer token. Where the
sandbox cluster gives the gateway an identity of its own, it uses that one, not the operator's, so the
API server's audit (and its policy, `localcluster/audit.py`) tells the agent's requests from the
operator's reads: the local plane writes `gateway.kubeconfig` (`oasis:gateway`) beside the admin one,
and the chart's sandbox control plane puts one in its PKI Secret (OASIS_GATEWAY_KUBECONFIG). Without one
(the chart's sandbox.mode=host: the operator's ServiceAccount, whose roles include impersonating the
agent ServiceAccounts; an evaluation's own kubeconfig Secret) the gateway uses the sandbox kubeconfig.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from oasis_operator import PROVIDER_FIELD_MANAGER
from oasis_operator.models.environment import AgentServiceAccount
from oasis_operator.pki import GATEWAY_KUBECONFIG

# Headers an agent may not choose: identity is the gateway's to decide, and hop-by-hop headers are ours.
DROPPED_REQUEST_HEADERS = frozenset(
    {
        "authorization",
        "host",
        "connection",
        "upgrade",
        "content-length",
        "accept-encoding",
        "keep-alive",
        "transfer-encoding",
        "proxy-authorization",
        "te",
        "trailer",
        "cookie",
    }
)


@dataclass(frozen=True)
class UpstreamConfig:
    """Address, TLS material and credentials of the sandbox API server, read from a kubeconfig."""

    server: str
    ssl_context: ssl.SSLContext
    # Sent with every request (the bearer token of a token user; nothing for a client certificate).
    auth_headers: tuple[tuple[str, str], ...] = ()


def _material(entry: dict[str, Any], key: str, base: Path, scratch: Path) -> Path | None:
    """A file holding `key` (given as a path, relative to the kubeconfig, or inline as `<key>-data`)."""
    if entry.get(key):
        path = Path(entry[key])
        return path if path.is_absolute() else base / path
    data = entry.get(f"{key}-data")
    if not data:
        return None
    target = scratch / key
    target.write_bytes(base64.b64decode(data))
    target.chmod(0o600)
    return target


def gateway_kubeconfig(sandbox_kubeconfig: Path, configured: Path | None = None) -> Path:
    """The kubeconfig the gateway authenticates with: `configured`, else the gateway's own beside the
    sandbox kubeconfig (`gateway.kubeconfig`, the local plane's), else the sandbox kubeconfig itself."""
    if configured is not None:
        return configured
    own = sandbox_kubeconfig.parent / GATEWAY_KUBECONFIG
    return own if own.is_file() and own != sandbox_kubeconfig else sandbox_kubeconfig


def load_upstream(kubeconfig: Path) -> UpstreamConfig:
    """Read the current context of a kubeconfig (client certificate, or `token` / `tokenFile`)."""
    doc = yaml.safe_load(kubeconfig.read_text())
    contexts = {c["name"]: c["context"] for c in doc.get("contexts", [])}
    context = contexts[doc["current-context"]]
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in doc["users"] if u["name"] == context["user"])
    base = kubeconfig.parent
    with tempfile.TemporaryDirectory(prefix="oasis-gw-") as scratch_dir:
        scratch = Path(scratch_dir)
        ca = _material(cluster, "certificate-authority", base, scratch)
        ctx = ssl.create_default_context(cafile=str(ca) if ca else None)
        cert = _material(user, "client-certificate", base, scratch)
        key = _material(user, "client-key", base, scratch)
        if cert is not None and key is not None:
            ctx.load_cert_chain(str(cert), str(key))
    server = str(cluster["server"]).rstrip("/")
    if cert is not None and key is not None:
        return UpstreamConfig(server=server, ssl_context=ctx)
    token = user.get("token")
    if not token and user.get("tokenFile"):
        path = Path(user["tokenFile"])
        token = (path if path.is_absolute() else base / path).read_text().strip()
    if not token:
        raise ValueError(f"{kubeconfig}: the gateway needs a user with a client certificate or a token")
    return UpstreamConfig(
        server=server, ssl_context=ctx, auth_headers=(("Authorization", f"Bearer {token}"),)
    )


def impersonation_headers(agent: AgentServiceAccount) -> list[tuple[str, str]]:
    """Headers that make the API server authorise a request as the environment's ServiceAccount."""
    return [("Impersonate-User", agent.username), *(("Impersonate-Group", g) for g in agent.groups)]


def json_accept(accept: str) -> str:
    """The agent's Accept header without protobuf (the gateway rewrites only JSON) and without aggregated
    discovery (`as=APIGroupDiscoveryList`, asked for by kubectl and client-go since 1.26), which only the
    discovery roots serve (`discovery_accept`).
    """
    kept = [
        part.strip()
        for part in accept.split(",")
        if part.strip() and "protobuf" not in part and "apidiscovery.k8s.io" not in part
    ]
    return ",".join(kept) or "application/json"


def discovery_accept(accept: str) -> str:
    """The agent's Accept header for the discovery roots (`/api`, `/apis`): aggregated discovery kept in
    its JSON form, which the gateway filters as it does `APIGroupList` (one request instead of one per
    group version); protobuf dropped."""
    kept = [part.strip() for part in accept.split(",") if part.strip() and "protobuf" not in part]
    return ",".join(kept) or "application/json"


def forwarded_accept(path_qs: str) -> Callable[[str], str] | None:
    """How the agent's Accept header is rewritten for `path_qs`: `discovery_accept` for the discovery
    roots, `json_accept` for the API's other documents, None (kept as sent) for anything else."""
    if path_qs.split("?", 1)[0].rstrip("/") in ("/api", "/apis"):
        return discovery_accept
    return json_accept if path_qs.startswith(("/api/", "/apis/")) and path_qs.count("/") > 2 else None


class Upstream:
    """An aiohttp session to the sandbox API server."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(ssl=self.config.ssl_context, limit=64)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
        # The gateway's own requests (stimuli, filtered reads) carry the provider's field manager; forwarded
        # agent requests carry the agent's own User-Agent, which replaces this default.
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            auto_decompress=True,
            headers={"User-Agent": f"{PROVIDER_FIELD_MANAGER}/gateway"},
        )

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("upstream session not started")
        return self._session

    def request(
        self,
        method: str,
        path_and_query: str,
        headers: list[tuple[str, str]],
        body: bytes | None = None,
        timeout: float | None = 60.0,
    ) -> Any:
        """Start a request; use as `async with upstream.request(...) as response`."""
        return self.session.request(
            method,
            self.config.server + path_and_query,
            headers=[*self.config.auth_headers, *headers],
            data=body,
            timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=10),
            allow_redirects=False,
        )

    async def get_json(
        self, path_and_query: str, agent: AgentServiceAccount | None = None, accept: str = "application/json"
    ) -> tuple[int, Any]:
        """GET a document (as the gateway, or as `agent`); returns (status, parsed body or None)."""
        headers = [("Accept", accept)]
        if agent is not None:
            headers += impersonation_headers(agent)
        async with self.request("GET", path_and_query, headers) as resp:
            raw = await resp.read()
        try:
            return resp.status, _loads(raw)
        except ValueError:
            return resp.status, None

    async def post_json(self, path: str, body: Any) -> tuple[int, Any]:
        """POST a JSON document as the gateway."""
        data = json.dumps(body).encode()
        headers = [("Accept", "application/json"), ("Content-Type", "application/json")]
        async with self.request("POST", path, headers, data) as resp:
            raw = await resp.read()
        return resp.status, _loads(raw)


def _loads(raw: bytes) -> Any:
    return json.loads(raw) if raw else None
