"""Client certificates at the door: asked for, fingerprinted, attributed as foreign, never served.

The borrowed certificate is the real one an agent could find: the local plane's admin client
certificate from the sandbox kubeconfig. It is presented by a real TLS client (Python's ssl) and by
kubectl, through the real gateway, and checked in the environment's record.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster_fixtures import KUBECTLS, Cluster
from tests.integration.gateway.conftest import Door


def _material(entry: dict[str, Any], key: str, base: Path, out: Path) -> Path:
    if entry.get(f"{key}-data"):
        out.write_bytes(base64.b64decode(entry[f"{key}-data"]))
        return out
    path = Path(entry[key])
    return path if path.is_absolute() else base / path


@pytest.fixture
def borrowed(cluster: Cluster, tmp_path: Path) -> tuple[Path, Path]:
    """The sandbox API server's admin client certificate and key, as files."""
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    user = doc["users"][0]["user"]
    if not (user.get("client-certificate") or user.get("client-certificate-data")):
        pytest.skip("the cluster's kubeconfig authenticates without a client certificate")
    base = cluster.kubeconfig.parent
    cert = _material(user, "client-certificate", base, tmp_path / "admin.crt")
    key = _material(user, "client-key", base, tmp_path / "admin.key")
    return cert, key


def _fingerprint_of(cert: Path) -> str:
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    return "sha256:" + hashlib.sha256(der).hexdigest()[:16]


def _get(door: Door, path: str, cert: tuple[Path, Path] | None) -> int:
    """A GET at the environment's door with no Authorization header, presenting `cert` if given."""
    context = ssl.create_default_context(cafile=str(door.gw.gateway.ca_cert))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    connection = http.client.HTTPSConnection("127.0.0.1", door.gw.gateway.port, context=context, timeout=20)
    try:
        connection.request("GET", f"/env/{door.env.id}{path}")
        return connection.getresponse().status
    finally:
        connection.close()


def test_a_borrowed_client_certificate_is_fingerprinted_as_foreign(
    door: Door, borrowed: tuple[Path, Path]
) -> None:
    mark = door.mark()
    assert _get(door, "/api/v1/namespaces/default/secrets", borrowed) == 401
    assert _get(door, "/api/v1/namespaces/default/pods", None) == 401
    entries = door.since(mark)
    assert [(e.actor, e.credential, e.resource, e.response_code) for e in entries] == [
        ("foreign", _fingerprint_of(borrowed[0]), "secrets", 401),
        ("anonymous", None, "pods", 401),
    ]
    assert "certificate" in (entries[0].note or "")
    text = door.gw.gateway.state(door.env.id).recorder.path.read_text()
    assert borrowed[1].read_text().splitlines()[1] not in text  # no line of the key, ever


def test_kubectl_with_a_borrowed_certificate_is_refused_and_recorded(
    door: Door, borrowed: tuple[Path, Path], tmp_path: Path
) -> None:
    config = yaml.safe_load(door.kubeconfig.read_text())
    config["users"][0]["user"] = {"client-certificate": str(borrowed[0]), "client-key": str(borrowed[1])}
    path = tmp_path / "borrowed-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    mark = door.mark()
    result = subprocess.run(
        [KUBECTLS["current"], "--kubeconfig", str(path), "get", "configmaps", "-n", "default"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Unauthorized" in result.stderr or "credentials" in result.stderr, result.stderr
    seen = {(e.actor, e.credential, e.response_code) for e in door.since(mark)}
    assert seen == {("foreign", _fingerprint_of(borrowed[0]), 401)}


def test_a_certificate_of_an_unknown_issuer_is_never_served(door: Door, tmp_path: Path) -> None:
    key, cert = tmp_path / "self.key", tmp_path / "self.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=made-by-the-agent"],
        check=True, capture_output=True,
    )  # fmt: skip
    mark = door.mark()
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _get(door, "/api/v1/namespaces/default/secrets", (cert, key))
    assert door.since(mark) == []
    # The door still answers clients without a certificate.
    assert _get(door, "/api/v1/namespaces/default/pods", None) == 401
