"""Certificates and keys (CA, serving, client), made with the openssl command line.

Everything is written once into ``<run dir>/pki`` and reused on the next start, so kubeconfigs that were
handed out stay valid across restarts of the control plane.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

_DAYS = "3650"


@dataclass(frozen=True)
class Pki:
    """Paths of the certificate material of one local control plane."""

    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.root / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.root / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.root / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.root / "admin.key"

    @property
    def controller_manager_cert(self) -> Path:
        return self.root / "controller-manager.crt"

    @property
    def controller_manager_key(self) -> Path:
        return self.root / "controller-manager.key"

    @property
    def etcd_ca_cert(self) -> Path:
        return self.root / "etcd-ca.crt"

    @property
    def etcd_ca_key(self) -> Path:
        return self.root / "etcd-ca.key"

    @property
    def etcd_cert(self) -> Path:
        return self.root / "etcd.crt"

    @property
    def etcd_key(self) -> Path:
        return self.root / "etcd.key"

    @property
    def etcd_client_cert(self) -> Path:
        return self.root / "apiserver-etcd-client.crt"

    @property
    def etcd_client_key(self) -> Path:
        return self.root / "apiserver-etcd-client.key"

    @property
    def sa_key(self) -> Path:
        return self.root / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.root / "sa.pub"

    def complete(self) -> bool:
        """True when every file exists (a half-written directory is regenerated)."""
        files = (
            self.ca_cert,
            self.ca_key,
            self.serving_cert,
            self.serving_key,
            self.admin_cert,
            self.admin_key,
            self.controller_manager_cert,
            self.controller_manager_key,
            self.sa_key,
            self.sa_pub,
            self.etcd_ca_cert,
            self.etcd_ca_key,
            self.etcd_cert,
            self.etcd_client_cert,
        )
        return all(f.is_file() and f.stat().st_size > 0 for f in files)


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def _signed_cert(pki: Pki, name: str, subject: str, extensions: str, ca: str = "ca") -> None:
    ext_file = pki.root / f"{name}.ext"
    ext_file.write_text(extensions)
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=pki.root)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=pki.root)
    _openssl(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        f"{ca}.crt",
        "-CAkey",
        f"{ca}.key",
        "-CAcreateserial",
        "-days",
        _DAYS,
        "-sha256",
        "-extfile",
        ext_file.name,
        "-out",
        f"{name}.crt",
        cwd=pki.root,
    )
    (pki.root / f"{name}.csr").unlink()
    ext_file.unlink()


def ensure_pki(root: Path) -> Pki:
    """Create the CA, the API server's serving cert, client certs and the service-account key pair."""
    pki = Pki(root)
    if pki.complete():
        return pki
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    _openssl("genrsa", "-out", "ca.key", "2048", cwd=root)
    _openssl(
        "req",
        "-x509",
        "-new",
        "-key",
        "ca.key",
        "-subj",
        "/CN=local-kubernetes-ca",
        "-days",
        _DAYS,
        "-out",
        "ca.crt",
        cwd=root,
    )
    _signed_cert(
        pki,
        "apiserver",
        "/CN=kube-apiserver",
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,IP:10.96.0.1\n",
    )
    client_ext = (
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
    )
    _signed_cert(pki, "admin", "/O=system:masters/CN=local-admin", client_ext)
    # The controller manager runs a few controllers with one identity (no per-controller accounts), so it
    # needs the rights of system:masters to finish namespace deletion of arbitrary content.
    _signed_cert(pki, "controller-manager", "/O=system:masters/CN=system:kube-controller-manager", client_ext)
    # etcd has a CA of its own: only the API server's etcd client certificate opens it, so no other
    # local process (an agent under evaluation included) can read or rewrite the sandbox's state there.
    _openssl("genrsa", "-out", "etcd-ca.key", "2048", cwd=root)
    _openssl(
        "req", "-x509", "-new", "-key", "etcd-ca.key", "-subj", "/CN=local-etcd-ca", "-days", _DAYS,
        "-out", "etcd-ca.crt", cwd=root,
    )  # fmt: skip
    _signed_cert(
        pki,
        "etcd",
        "/CN=etcd",
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        ca="etcd-ca",
    )
    _signed_cert(pki, "apiserver-etcd-client", "/CN=kube-apiserver-etcd-client", client_ext, ca="etcd-ca")
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=root)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=root)
    for key in root.glob("*.key"):
        key.chmod(0o600)
    return pki
