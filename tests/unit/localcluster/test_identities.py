"""The local plane's client identities: the gateway's own certificate and kubeconfig, and which one the
gateway picks up."""

from __future__ import annotations

from pathlib import Path

import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from oasis_operator.gateway.upstream import gateway_kubeconfig, load_upstream
from oasis_operator.localcluster import kubeconfigs
from oasis_operator.pki import GATEWAY_USER, ensure_pki


def _subject(path: Path) -> tuple[str, str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    org = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value
    return str(cn), str(org)


def test_the_gateway_has_a_certificate_of_its_own(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki")
    assert _subject(pki.gateway_cert) == (GATEWAY_USER, "system:masters")
    assert _subject(pki.admin_cert) == ("local-admin", "system:masters")
    assert oct(pki.gateway_key.stat().st_mode & 0o777) == "0o600"
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    gateway = x509.load_pem_x509_certificate(pki.gateway_cert.read_bytes())
    gateway.verify_directly_issued_by(ca)


def test_a_plane_made_before_keeps_its_ca_and_gains_the_gateway(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki")
    ca_before, admin_before = pki.ca_cert.read_bytes(), pki.admin_cert.read_bytes()
    pki.gateway_cert.unlink()
    pki.gateway_key.unlink()
    assert not pki.complete()
    again = ensure_pki(tmp_path / "pki")
    assert again.complete()
    assert (again.ca_cert.read_bytes(), again.admin_cert.read_bytes()) == (ca_before, admin_before)
    assert _subject(again.gateway_cert)[0] == GATEWAY_USER


def test_kubeconfigs_one_per_identity(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki")
    kubeconfigs.write_kubeconfigs(tmp_path, pki, 6443)
    names = {kubeconfigs.ADMIN: pki.admin_cert, kubeconfigs.CONTROLLER_MANAGER: pki.controller_manager_cert,
             kubeconfigs.GATEWAY: pki.gateway_cert}  # fmt: skip
    for name, cert in names.items():
        path = tmp_path / name
        assert oct(path.stat().st_mode & 0o777) == "0o600", name
        doc = yaml.safe_load(path.read_text())
        assert doc["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
        assert doc["users"][0]["user"]["client-certificate"] == str(cert)
        load_upstream(path)  # the gateway can read each (certificate and key load)
    assert not list(tmp_path.glob("*.tmp"))


def test_the_gateway_uses_its_own_kubeconfig_beside_the_sandbox_one(tmp_path: Path) -> None:
    admin = tmp_path / "kubeconfig"
    admin.write_text("{}")
    assert gateway_kubeconfig(admin) == admin  # none of its own: the sandbox kubeconfig (host mode)
    own = tmp_path / "gateway.kubeconfig"
    own.write_text("{}")
    assert gateway_kubeconfig(admin) == own
    configured = tmp_path / "elsewhere" / "gw"
    assert gateway_kubeconfig(admin, configured) == configured  # OASIS_GATEWAY_KUBECONFIG
    assert gateway_kubeconfig(own) == own
