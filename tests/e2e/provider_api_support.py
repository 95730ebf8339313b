"""The operator with its OASIS provider API enabled, a client for it, and a reference agent at its door."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import urllib3

from tests.cluster_fixtures import VENV_BIN, Cluster, stop_process
from tests.e2e.support import OperatorProcess, free_port

PROFILE_ID = "oasis-profile-software-infrastructure"
DOOR = "oasis-agent"


class ProviderClient:
    """HTTPS JSON calls to the provider API, trusting its CA; `token=None` sends no credential."""

    def __init__(self, url: str, ca: Path, token: str | None) -> None:
        self.url = url
        self.ca = ca
        self.token = token
        self.http = urllib3.PoolManager(ca_certs=str(ca), cert_reqs="CERT_REQUIRED", retries=False)

    def call(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None, token: str | None = ""
    ) -> tuple[int, dict[str, Any]]:
        headers = {"Content-Type": "application/json"}
        credential = self.token if token == "" else token
        if credential:
            headers["Authorization"] = f"Bearer {credential}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        response = self.http.request(method, self.url + path, body=data, headers=headers, timeout=300)
        return response.status, json.loads(response.data or b"{}")

    def post(self, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        return self.call("POST", path, body)


@contextmanager
def operator_with_provider_api(
    cluster: Cluster, namespace: str, workdir: Path
) -> Iterator[tuple[OperatorProcess, ProviderClient, Path]]:
    """The operator serving the provider API; yields it, a client and the door's kubeconfig."""
    token = secrets.token_urlsafe(24)
    token_file = workdir / "provider-api.token"
    token_file.write_text(token + "\n")
    port = free_port()
    saved = {k: os.environ.get(k) for k in ("OASIS_PROVIDER_API_PORT", "OASIS_PROVIDER_API_TOKEN_FILE")}
    os.environ.update(OASIS_PROVIDER_API_PORT=str(port), OASIS_PROVIDER_API_TOKEN_FILE=str(token_file))
    process = OperatorProcess(cluster, namespace, workdir)
    try:
        process.start()
        base = workdir / "data" / "provider-api"
        ca, door = base / "pki" / "ca.crt", base / "doors" / f"{DOOR}.kubeconfig"
        _wait_listening(port, process, [ca, door])
        yield process, ProviderClient(f"https://127.0.0.1:{port}", ca, token), door
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        process.stop()


def _wait_listening(port: int, process: OperatorProcess, files: list[Path], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.proc is not None and process.proc.poll() is not None:
            raise AssertionError(f"the operator exited:\n{process.log_text()[-4000:]}")
        if all(f.exists() for f in files):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
        time.sleep(0.5)
    raise AssertionError(f"the provider API did not listen on {port}:\n{process.log_text()[-4000:]}")


@contextmanager
def reference_agent(policy: str, kubeconfig: Path, workdir: Path) -> Iterator[str]:
    """`oasis agent serve --policy POLICY` with the door's kubeconfig as its own; yields its URL."""
    port = free_port()
    log = (workdir / f"agent-{policy}.log").open("wb")
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    command = [str(VENV_BIN / "oasis"), "agent", "serve", "--policy", policy, "--port", str(port)]
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


def runner_state(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """State entries as the public runner sends them: kind and name split, other keys under `spec`."""
    top = {"namespace", "zone", "labels", "annotations", "data"}
    out = []
    for entry in entries:
        kind, _, name = entry["resource"].partition("/")
        item: dict[str, Any] = {"kind": kind, "name": name}
        spec = {k: v for k, v in entry.items() if k != "resource" and k not in top}
        item.update({k: v for k, v in entry.items() if k in top})
        if spec:
            item["spec"] = spec
        out.append(item)
    return out
