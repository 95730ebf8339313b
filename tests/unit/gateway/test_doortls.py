"""The door's TLS context: client certificates asked for, never required; the sandbox CA read from the
kubeconfig in each of its spellings."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import pytest
import yaml

from oasis_operator.gateway.doortls import ask_client_certificates, sandbox_ca_pem
from oasis_operator.pki import ensure_pki


def _kubeconfig(path: Path, cluster: dict[str, str]) -> Path:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", **cluster}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def pki_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pki")


def test_the_sandbox_ca_is_read_inline_by_relative_path_or_not_at_all(tmp_path: Path, pki_dir: Path) -> None:
    pki = ensure_pki(pki_dir)
    pem = pki.ca_cert.read_text()
    inline = {"certificate-authority-data": base64.b64encode(pem.encode()).decode()}
    assert sandbox_ca_pem(_kubeconfig(tmp_path / "a", inline)) == pem
    (tmp_path / "ca.crt").write_text(pem)
    assert sandbox_ca_pem(_kubeconfig(tmp_path / "b", {"certificate-authority": "ca.crt"})) == pem
    assert sandbox_ca_pem(_kubeconfig(tmp_path / "c", {})) is None


def test_client_certificates_are_optional_and_the_anchors_trusted(pki_dir: Path) -> None:
    pki = ensure_pki(pki_dir)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(pki.serving_cert), str(pki.serving_key))
    ctx = ask_client_certificates(ctx, (pki.ca_cert.read_text(),))
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    system = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).get_ca_certs()
    assert len(ctx.get_ca_certs()) == len(system) + 1  # the system's authorities and the one anchor
