"""Certificates and keys (CA, serving, client), made with the openssl command line.

Everything is written once into ``<run dir>/pki`` and reused on the next start, so kubeconfigs that were
handed out stay valid across restarts of the control plane.

Client identities (the API server's audit tells them apart by these names): the operator's admin
(`local-admin`), the controller manager, and the agent gateway (`oasis:gateway`), which forwards the
agent's requests impersonating its ServiceAccount. The gateway has an identity of its own so that the
audit policy can drop the operator's own reads (snapshots, observation) and keep the agent's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_DAYS = "3650"
# The gateway's user name on the local plane, and the file name of its kubeconfig, written beside the
# admin's one (`gateway/upstream.py: gateway_kubeconfig` looks for it there).
GATEWAY_USER = "oasis:gateway"
GATEWAY_KUBECONFIG = "gateway.kubeconfig"
# The identity kwok (the nodes' kubelets) uses on the local plane; attributed as the cluster's own.
KWOK_USER = "system:node-simulator"
_CLIENT_EXT = (
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
)


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
    def scheduler_cert(self) -> Path:
        return self.root / "scheduler.crt"

    @property
    def scheduler_key(self) -> Path:
        return self.root / "scheduler.key"

    @property
    def kwok_cert(self) -> Path:
        return self.root / "node-simulator.crt"

    @property
    def kwok_key(self) -> Path:
        return self.root / "node-simulator.key"

    @property
    def gateway_cert(self) -> Path:
        return self.root / "gateway.crt"

    @property
    def gateway_key(self) -> Path:
        return self.root / "gateway.key"

    @property
    def kubelet_client_cert(self) -> Path:
        return self.root / "apiserver-kubelet-client.crt"

    @property
    def kubelet_client_key(self) -> Path:
        return self.root / "apiserver-kubelet-client.key"

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
        return all(f.is_file() and f.stat().st_size > 0 for f in _files(self))


def _files(pki: Pki) -> tuple[Path, ...]:
    return (
        pki.ca_cert,
        pki.ca_key,
        pki.serving_cert,
        pki.serving_key,
        pki.admin_cert,
        pki.admin_key,
        pki.controller_manager_cert,
        pki.controller_manager_key,
        pki.gateway_cert,
        pki.gateway_key,
        pki.scheduler_cert,
        pki.scheduler_key,
        pki.kwok_cert,
        pki.kwok_key,
        pki.kubelet_client_cert,
        pki.kubelet_client_key,
        pki.sa_key,
        pki.sa_pub,
        pki.etcd_ca_cert,
        pki.etcd_ca_key,
        pki.etcd_cert,
        pki.etcd_client_cert,
    )


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
    later = _missing_later_identities(pki)
    if later:
        # A plane made before the gateway, the scheduler or kwok had its own identity: add them, keep
        # the CA (and so every kubeconfig handed out).
        for make in later:
            make()
        for key in pki.root.glob("*.key"):
            key.chmod(0o600)
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
    _signed_cert(pki, "admin", "/O=system:masters/CN=local-admin", _CLIENT_EXT)
    # The controller manager runs a few controllers with one identity (no per-controller accounts), so it
    # needs the rights of system:masters to finish namespace deletion of arbitrary content.
    controller_manager = "/O=system:masters/CN=system:kube-controller-manager"
    _signed_cert(pki, "controller-manager", controller_manager, _CLIENT_EXT)
    # The scheduler's own identity: the API server's bootstrap roles (system:kube-scheduler,
    # system:volume-scheduler) are bound to it.
    _signed_cert(pki, "scheduler", "/CN=system:kube-scheduler", _CLIENT_EXT)
    # kwok plays every node's kubelet (node and pod status, leases, events, its Stages): the rights of
    # all kubelets together, which no bootstrap role holds; the plane holds nothing but sandboxes.
    _signed_cert(pki, "node-simulator", f"/O=system:masters/CN={KWOK_USER}", _CLIENT_EXT)
    _gateway_cert(pki)
    _kubelet_client_cert(pki)
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
    _signed_cert(pki, "apiserver-etcd-client", "/CN=kube-apiserver-etcd-client", _CLIENT_EXT, ca="etcd-ca")
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=root)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=root)
    for key in root.glob("*.key"):
        key.chmod(0o600)
    return pki


def _gateway_cert(pki: Pki) -> None:
    """The gateway's client certificate, in group system:masters of this sandbox-only plane.

    Its own work needs nearly every right there is: impersonating any environment's ServiceAccount,
    reading Namespaces and the cluster-scoped twin objects as itself (filtered to the environment),
    creating and patching any twin kind for temporal stimuli, and SubjectAccessReviews. A narrower
    ClusterRole would need a bootstrap write on every plane start (here and in the chart's plane) and
    grow with every kind stimuli may change; the plane holds nothing but sandboxes. What it needs
    apart from the operator is its own name, which the audit policy and the attribution match on.
    Requests it forwards are authorised as the impersonated agent, never with these rights.
    """
    _signed_cert(pki, "gateway", f"/O=system:masters/CN={GATEWAY_USER}", _CLIENT_EXT)
    pki.gateway_key.chmod(0o600)


def _kubelet_client_cert(pki: Pki) -> None:
    """The API server's client certificate towards a real node's kubelet (logs, exec through the API).

    The kubelet authorises it by a SubjectAccessReview; system:masters, as kubeadm's own certificate of
    this name was, since the plane holds nothing but sandboxes."""
    _signed_cert(
        pki, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client", _CLIENT_EXT
    )


def node_certs(pki: Pki, out: Path, node: str, node_ip: str) -> tuple[tuple[Path, Path], tuple[Path, Path]]:
    """A real node's kubelet certificates in `out`, signed by the plane's CA: its client certificate
    (`system:node:<node>` in system:nodes) and its serving certificate for `node_ip`. Made once."""
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o700)
    names = {"client": f"kubelet-client-{node}", "serving": f"kubelet-{node}"}
    made = {k: (out / f"{v}.crt", out / f"{v}.key") for k, v in names.items()}
    local = Pki(out)
    for link in ("ca.crt", "ca.key"):
        target = out / link
        if not target.exists():
            target.symlink_to(pki.root / link)
    if not all(p.is_file() for pair in made.values() for p in pair):
        _signed_cert(local, names["client"], f"/O=system:nodes/CN=system:node:{node}", _CLIENT_EXT)
        _signed_cert(
            local,
            names["serving"],
            f"/CN={node}",
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
            f"extendedKeyUsage=serverAuth\nsubjectAltName=IP:{node_ip},DNS:{node}\n",
        )
        for key in out.glob("*.key"):
            key.chmod(0o600)
    return made["client"], made["serving"]


def _later_identities(pki: Pki) -> dict[str, Callable[[], None]]:
    """Client certificates added after the first planes were made, each with how to make it alone."""
    return {
        "gateway": lambda: _gateway_cert(pki),
        "scheduler": lambda: _signed_cert(pki, "scheduler", "/CN=system:kube-scheduler", _CLIENT_EXT),
        "node-simulator": lambda: _signed_cert(
            pki, "node-simulator", f"/O=system:masters/CN={KWOK_USER}", _CLIENT_EXT
        ),
        "apiserver-kubelet-client": lambda: _kubelet_client_cert(pki),
    }


def _missing_later_identities(pki: Pki) -> list[Callable[[], None]] | None:
    """How to make the later identities a plane lacks, when all else is there; None otherwise."""
    later = _later_identities(pki)
    missing = [name for name in later if not (pki.root / f"{name}.crt").is_file()]
    saved = {pki.root / f"{name}.{ext}" for name in missing for ext in ("crt", "key")}
    others = [f for f in _files(pki) if f not in saved]
    if not missing or not all(f.is_file() and f.stat().st_size > 0 for f in others):
        return None
    return [later[name] for name in missing]
