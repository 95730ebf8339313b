"""The gateway's serving certificate, and the CA every agent kubeconfig carries to verify it.

Two sources, one shape (`ServingTLS`: a live `ssl.SSLContext` plus the CA file agents are given):

- **A mounted `kubernetes.io/tls` Secret** (`gateway.tls.secretName`, or the chart's cert-manager
  `Certificate`): `tls.crt`, `tls.key` and, when present, `ca.crt` (cert-manager writes it). Without
  `ca.crt` agents are given the top certificate of the `tls.crt` chain (the certificate itself when it
  is self-signed). `refresh()` notices a rotated Secret (the kubelet swaps the files) and loads the new
  pair into the same context, so new connections get the new certificate without a restart; a pair that
  does not load (a half-written rotation) keeps the old one until the next look.
- **The operator's own CA**, made once in its data directory: a serving certificate whose names are
  `serving_names(...)`: the Service's four DNS forms, the Ingress host, the host of the advertised URL,
  and the loopback names. It is issued again when the names change or it nears its end.

No agent is ever told to skip verification: the kubeconfig's `certificate-authority-data` is this CA.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import logging
import os
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_CA_DAYS = 3650
_SERVING_DAYS = 365
# Issue the own serving certificate again when less than this is left of it.
_RENEW_BEFORE = datetime.timedelta(days=30)


@dataclass(frozen=True)
class GatewayTLSConfig:
    """Where the serving certificate comes from, and the names it must cover (from the chart's values)."""

    # A mounted kubernetes.io/tls Secret (tls.crt, tls.key, optional ca.crt); None: the operator's own CA.
    secret_dir: Path | None = None
    # The gateway Service's name and namespace (its DNS names go into the own certificate).
    service: str | None = None
    namespace: str | None = None
    # More host names or URLs agents use: the Ingress host, the advertised URL.
    hosts: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: os._Environ[str] | dict[str, str]) -> GatewayTLSConfig:
        """OASIS_GATEWAY_TLS_DIR, OASIS_GATEWAY_SERVICE, OASIS_GATEWAY_NAMESPACE, OASIS_GATEWAY_HOSTS
        (comma-separated) and OASIS_GATEWAY_URL, as the chart sets them."""
        hosts = [h.strip() for h in env.get("OASIS_GATEWAY_HOSTS", "").split(",") if h.strip()]
        if env.get("OASIS_GATEWAY_URL"):
            hosts.append(env["OASIS_GATEWAY_URL"])
        secret_dir = env.get("OASIS_GATEWAY_TLS_DIR")
        return cls(
            secret_dir=Path(secret_dir) if secret_dir else None,
            service=env.get("OASIS_GATEWAY_SERVICE") or None,
            namespace=env.get("OASIS_GATEWAY_NAMESPACE") or None,
            hosts=tuple(hosts),
        )


def host_of(name: str) -> str:
    """The host of a URL (`https://gw.example.com:8443/x` -> `gw.example.com`), or `name` as it is."""
    if "://" in name:
        return urlsplit(name).hostname or ""
    return name.strip("[]")


def service_names(service: str, namespace: str) -> tuple[str, ...]:
    """The DNS names a Service answers to inside the cluster."""
    return (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    )


def serving_names(service: str | None, namespace: str | None, hosts: Iterable[str] = ()) -> tuple[str, ...]:
    """Every name the gateway's own certificate covers, in a stable order, without repeats."""
    names: list[str] = []
    if service:
        if not namespace:
            raise ValueError(
                "OASIS_GATEWAY_NAMESPACE: the gateway Service's namespace is needed with its name"
            )
        names += service_names(service, namespace)
    names += [host_of(h) for h in hosts]
    names += LOOPBACK_NAMES
    return tuple(dict.fromkeys(n for n in names if n))


class ServingTLS:
    """A server-side SSL context kept loaded with the current certificate, and the CA agents verify it by.

    `cert`/`key`: the serving pair; `ca_source`: the CA file (None: the top of the `cert` chain); `ca_cert`
    is a stable copy of the CA in `work_dir` (what kubeconfigs embed), rewritten when the CA changes.
    """

    def __init__(self, cert: Path, key: Path, ca_source: Path | None, work_dir: Path, origin: str) -> None:
        self.cert = cert
        self.key = key
        self.ca_source = ca_source
        self.origin = origin
        work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.ca_cert = work_dir / "agent-ca.crt"
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._loaded = ""
        if not self.refresh():
            raise ValueError(f"{origin}: the certificate and key could not be loaded ({self._error})")

    def _fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in (self.cert, self.key, self.ca_source):
            if path is not None:
                digest.update(path.read_bytes() if path.is_file() else b"-")
        return digest.hexdigest()

    def refresh(self) -> bool:
        """Load the files again if they changed; True when what is served is current."""
        self._error = ""
        try:
            fingerprint = self._fingerprint()
            if fingerprint == self._loaded:
                return True
            probe = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            probe.load_cert_chain(str(self.cert), str(self.key))  # a mismatched pair fails here, not live
            ca = self.ca_source.read_bytes() if self.ca_source is not None else _top_of_chain(self.cert)
            x509.load_pem_x509_certificates(ca)
        except (OSError, ssl.SSLError, ValueError) as exc:
            self._error = f"{type(exc).__name__}: {exc}"
            log.warning("gateway certificate not (re)loaded origin=%s error=%s", self.origin, self._error)
            return False
        # The live context takes the new pair: handshakes from now on present it.
        self.context.load_cert_chain(str(self.cert), str(self.key))
        if not self.ca_cert.is_file() or self.ca_cert.read_bytes() != ca:
            tmp = self.ca_cert.with_suffix(".tmp")
            tmp.write_bytes(ca)
            tmp.replace(self.ca_cert)
        changed = bool(self._loaded)
        self._loaded = fingerprint
        log.info("gateway certificate %s origin=%s", "rotated" if changed else "loaded", self.origin)
        return True

    @property
    def ca_pem(self) -> bytes:
        return self.ca_cert.read_bytes()


def _top_of_chain(cert: Path) -> bytes:
    chain = x509.load_pem_x509_certificates(cert.read_bytes())
    return chain[-1].public_bytes(serialization.Encoding.PEM)


def secret_tls(secret_dir: Path, work_dir: Path) -> ServingTLS:
    """The serving pair from a mounted kubernetes.io/tls Secret; an error names what is missing."""
    missing = [n for n in ("tls.crt", "tls.key") if not (secret_dir / n).is_file()]
    if missing:
        raise ValueError(
            f"OASIS_GATEWAY_TLS_DIR (gateway.tls.secretName): {secret_dir} lacks {', '.join(missing)}; "
            "the Secret must be of type kubernetes.io/tls"
        )
    ca = secret_dir / "ca.crt"
    return ServingTLS(
        secret_dir / "tls.crt",
        secret_dir / "tls.key",
        ca if ca.is_file() else None,
        work_dir,
        f"secret {secret_dir}",
    )


def own_tls(root: Path, names: tuple[str, ...]) -> ServingTLS:
    """The operator's own CA (made once under `root`) and a serving certificate for exactly `names`."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_cert, ca_key = root / "ca.crt", root / "ca.key"
    if not (ca_cert.is_file() and ca_key.is_file()):
        _write_ca(ca_cert, ca_key)
    cert, key = root / "tls.crt", root / "tls.key"
    if not _covers(cert, key, names):
        _issue(ca_cert, ca_key, cert, key, names)
    return ServingTLS(cert, key, ca_cert, root, f"own CA {root}")


def gateway_tls(config: GatewayTLSConfig, data_dir: Path, extra_hosts: Iterable[str] = ()) -> ServingTLS:
    """The serving TLS `config` asks for: the mounted Secret, else the operator's own CA in `data_dir`."""
    if config.secret_dir is not None:
        return secret_tls(config.secret_dir, data_dir / "tls")
    names = serving_names(config.service, config.namespace, (*config.hosts, *extra_hosts))
    return own_tls(data_dir / "tls", names)


def certificate_names(cert: Path) -> tuple[str, ...]:
    """The DNS and IP names of a PEM certificate's subjectAltName."""
    leaf = x509.load_pem_x509_certificates(cert.read_bytes())[0]
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    dns = san.get_values_for_type(x509.DNSName)
    ips = [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return (*dns, *ips)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.touch(mode=0o600)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _write_ca(cert_path: Path, key_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "oasis-operator gateway CA")])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_key(key_path, key)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _san(names: tuple[str, ...]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _issue(ca_cert: Path, ca_key: Path, cert_path: Path, key_path: Path, names: tuple[str, ...]) -> None:
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise TypeError(f"{ca_key}: not the gateway CA's key (expected an EC key)")
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_SERVING_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_san(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False
        )
        .sign(signer, hashes.SHA256())
    )
    _write_key(key_path, key)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _covers(cert: Path, key: Path, names: tuple[str, ...]) -> bool:
    """An existing serving certificate is kept when it names exactly `names` and is not near its end."""
    if not (cert.is_file() and key.is_file()):
        return False
    try:
        leaf = x509.load_pem_x509_certificate(cert.read_bytes())
    except ValueError:
        return False
    fresh = leaf.not_valid_after_utc - _now() > _RENEW_BEFORE
    return fresh and set(certificate_names(cert)) == set(names)
