"""Answers the gateway gives at the door, before anything is forwarded: 429, 413, 400, all recorded.

No API server is needed: these requests never leave the gateway (its upstream is a closed port).
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from yarl import URL

from oasis_operator.gateway import Gateway, GatewayConfig
from oasis_operator.gateway.ratelimit import RateLimit
from oasis_operator.pki import ensure_pki
from tests.unit.gateway.helpers import environment


@pytest.fixture(scope="module")
def made_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gateway's PKI, made once; its admin certificate stands in for the API server's client cert."""
    data = tmp_path_factory.mktemp("door")
    pki = ensure_pki(data / "pki")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": str(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {"client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key)},
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    (data / "kubeconfig").write_text(yaml.safe_dump(config))
    return data


@pytest.fixture
def data_dir(made_once: Path, tmp_path: Path) -> Path:
    """A fresh data directory (a record of its own) with the PKI made once."""
    shutil.copytree(made_once / "pki", tmp_path / "pki")
    shutil.copy(made_once / "kubeconfig", tmp_path / "kubeconfig")
    return tmp_path


async def _serve(data_dir: Path, **options: Any) -> AsyncIterator[tuple[Gateway, str, dict[str, str]]]:
    gateway = Gateway(data_dir / "kubeconfig", data_dir, GatewayConfig(builtin_apis=False, **options))
    await gateway.start()
    try:
        creds = gateway.register(environment())
        yield gateway, creds.server, {"Authorization": f"Bearer {creds.token}"}
    finally:
        await gateway.stop()


def _client(gateway: Gateway) -> aiohttp.ClientSession:
    context = ssl.create_default_context(cafile=str(gateway.ca_cert))
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context))


def test_requests_over_the_rate_limit_get_429_with_retry_after_and_are_recorded(data_dir: Path) -> None:
    async def main() -> list[tuple[int, str, dict[str, Any]]]:
        out = []
        async for gateway, server, auth in _serve(data_dir, rate_limit=RateLimit(rate=0.5, burst=2)):
            async with _client(gateway) as client:
                for _ in range(3):
                    # A malformed path is answered at the door too, so nothing is forwarded.
                    async with client.get(
                        URL(f"{server}/api/v1/namespaces/%2e%2e/pods", encoded=True), headers=auth
                    ) as resp:
                        out.append((resp.status, resp.headers.get("Retry-After", ""), await resp.json()))
            entries = gateway.audit_entries("abc123")
            assert [(e.response_code, e.note.split(" (")[0]) for e in entries] == [
                (400, "the request path contains an encoded separator or dot"),
                (400, "the request path contains an encoded separator or dot"),
                (429, "refused: rate limit"),
            ]
        return out

    answers = asyncio.run(main())
    assert [(code, retry) for code, retry, _ in answers] == [(400, ""), (400, ""), (429, "2")]
    doc = answers[2][2]
    assert (doc["reason"], doc["code"], doc["details"]["retryAfterSeconds"]) == ("TooManyRequests", 429, 2)
    assert "0.5 requests per second, bursts of 2" in doc["message"]


def test_unauthenticated_requests_do_not_use_up_the_environment_s_limit(data_dir: Path) -> None:
    async def main() -> list[int]:
        codes = []
        async for gateway, server, auth in _serve(data_dir, rate_limit=RateLimit(rate=0.1, burst=1)):
            async with _client(gateway) as client:
                for headers in ({}, {"Authorization": "Bearer stolen"}, auth, auth):
                    async with client.get(
                        URL(f"{server}/api/v1/namespaces/%2e%2e/x", encoded=True), headers=headers
                    ) as resp:
                        codes.append(resp.status)
        return codes

    assert asyncio.run(main()) == [401, 401, 400, 429]


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_body_gets_413_and_is_recorded_without_it(data_dir: Path, chunked: bool) -> None:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(8):
            yield b"x" * 512

    async def main() -> tuple[int, dict[str, Any]]:
        async for gateway, server, auth in _serve(data_dir, max_body_bytes=1024):
            async with _client(gateway) as client:
                data: Any = body() if chunked else b"x" * 4096
                url = f"{server}/api/v1/namespaces/default/configmaps"
                async with client.post(url, headers=auth, data=data) as resp:
                    answer = (resp.status, await resp.json())
            entries = gateway.audit_entries("abc123")
            assert [(e.verb, e.resource, e.response_code, e.request_body) for e in entries] == [
                ("create", "configmaps", 413, None)
            ]
            assert entries[0].note == "refused: request body over 1024 bytes"
            return answer
        raise AssertionError("the gateway did not start")

    code, doc = asyncio.run(main())
    assert (code, doc["kind"], doc["reason"]) == (413, "Status", "RequestEntityTooLarge")
    assert "at most 1024 bytes" in doc["message"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_body_bytes": 0}, "max_body_bytes must be a positive number of bytes"),
        ({"rate_limit": 50}, "rate_limit must be a RateLimit or None"),
    ],
)
def test_bad_gateway_settings_name_what_to_fix(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        GatewayConfig(**options)


def test_a_gateway_refuses_settings_that_are_not_a_gateway_config(data_dir: Path) -> None:
    with pytest.raises(TypeError, match="config must be a GatewayConfig, not dict"):
        Gateway(data_dir / "kubeconfig", data_dir, {"port": 8443})  # type: ignore[arg-type]


def test_the_clients_session_header_is_recorded_with_each_request(data_dir: Path) -> None:
    async def main() -> list[str | None]:
        async for gateway, server, auth in _serve(data_dir):
            async with _client(gateway) as client:
                for session in ("s-1", None):
                    headers = {**auth, **({"Kubectl-Session": session} if session else {})}
                    async with client.get(
                        URL(f"{server}/api/v1/namespaces/%2e%2e/pods?limit=5", encoded=True), headers=headers
                    ) as resp:
                        assert resp.status == 400
            entries = gateway.audit_entries("abc123")
            assert entries[0].path.endswith("?limit=5")
            return [e.client_session for e in entries]
        return []

    assert asyncio.run(main()) == ["s-1", None]
