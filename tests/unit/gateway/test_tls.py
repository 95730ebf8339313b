"""The gateway's serving certificate: its names, its CA, and a mounted Secret picked up when it rotates.

Handshakes are real (a TLS server on 127.0.0.1 with the gateway's context, a client that verifies with
the CA agents are given); no API server is involved.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import shutil
import ssl
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from oasis_operator.gateway.credentials import build_kubeconfig
from oasis_operator.gateway.listener import Listener
from oasis_operator.gateway.tls import (
    GatewayTLSConfig,
    ServingTLS,
    certificate_names,
    gateway_tls,
    own_tls,
    secret_tls,
    serving_names,
)

SERVICE_NAMES = (
    "oasis-gateway",
    "oasis-gateway.oasis-system",
    "oasis-gateway.oasis-system.svc",
    "oasis-gateway.oasis-system.svc.cluster.local",
)


def test_serving_names_cover_the_service_the_ingress_and_the_advertised_url() -> None:
    names = serving_names(
        "oasis-gateway", "oasis-system", ["gw.example.test", "https://agents.example.test:8443/base"]
    )
    assert names == (
        *SERVICE_NAMES,
        "gw.example.test",
        "agents.example.test",
        "localhost",
        "127.0.0.1",
        "::1",
    )
    # Repeats are dropped, the order kept.
    assert serving_names(None, None, ["localhost", "https://localhost:1"]) == (
        "localhost",
        "127.0.0.1",
        "::1",
    )
    with pytest.raises(ValueError, match="OASIS_GATEWAY_NAMESPACE"):
        serving_names("oasis-gateway", None)


def test_the_config_reads_what_the_chart_sets() -> None:
    env = {
        "OASIS_GATEWAY_SERVICE": "oasis-gateway",
        "OASIS_GATEWAY_NAMESPACE": "oasis-system",
        "OASIS_GATEWAY_HOSTS": "gw.example.test, ",
        "OASIS_GATEWAY_URL": "https://agents.example.test",
    }
    config = GatewayTLSConfig.from_env(env)
    assert config == GatewayTLSConfig(
        None, "oasis-gateway", "oasis-system", ("gw.example.test", "https://agents.example.test")
    )
    assert GatewayTLSConfig.from_env({"OASIS_GATEWAY_TLS_DIR": "/etc/tls"}).secret_dir == Path("/etc/tls")


def test_the_own_certificate_names_exactly_what_was_asked_and_is_kept_until_the_names_change(
    tmp_path: Path,
) -> None:
    names = serving_names("oasis-gateway", "oasis-system", ["gw.example.test"])
    first = own_tls(tmp_path, names)
    assert set(certificate_names(first.cert)) == set(names)
    cert_bytes, ca_bytes = first.cert.read_bytes(), first.ca_cert.read_bytes()
    # Same names: nothing is issued again (kubeconfigs handed out stay valid).
    again = own_tls(tmp_path, names)
    assert again.cert.read_bytes() == cert_bytes
    # A new Ingress host: a new serving certificate, signed by the same CA.
    more = own_tls(tmp_path, (*names, "other.example.test"))
    assert more.cert.read_bytes() != cert_bytes
    assert more.ca_cert.read_bytes() == ca_bytes
    assert "other.example.test" in certificate_names(more.cert)


def _serve_once(tls: ServingTLS) -> tuple[int, asyncio.AbstractEventLoop, asyncio.AbstractServer]:
    loop = asyncio.new_event_loop()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = loop.run_until_complete(asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls.context))
    return int(server.sockets[0].getsockname()[1]), loop, server


def _handshake(port: int, ca: Path, name: str, loop: asyncio.AbstractEventLoop) -> x509.Certificate:
    """Connect as an agent would: verify the chain with `ca` and the name `name`; the leaf presented."""
    client = ssl.create_default_context(cafile=str(ca))

    async def connect() -> bytes:
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname=name)
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.close()
        return bytes(der)

    return x509.load_der_x509_certificate(loop.run_until_complete(connect()))


def test_an_agent_verifies_the_own_certificate_by_the_service_name_and_not_by_another(tmp_path: Path) -> None:
    tls = own_tls(tmp_path, serving_names("oasis-gateway", "oasis-system"))
    port, loop, server = _serve_once(tls)
    try:
        for name in SERVICE_NAMES:
            leaf = _handshake(port, tls.ca_cert, name, loop)
            assert leaf.subject.rfc4514_string() == "CN=oasis-gateway"
        with pytest.raises(ssl.SSLCertVerificationError, match=r"mismatch|match"):
            _handshake(port, tls.ca_cert, "gw.elsewhere.test", loop)
    finally:
        server.close()
        loop.close()


def _ca(name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, serial: int) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "oasis-gateway")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in SERVICE_NAMES]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


def _kubelet_write(secret_dir: Path, files: dict[str, bytes], version: int) -> None:
    """Write a Secret volume the way the kubelet does: a new timestamped directory, `..data` swapped to
    it atomically, each key a symlink through `..data`."""
    data = secret_dir / f"..v{version}"
    data.mkdir()
    for name, content in files.items():
        (data / name).write_bytes(content)
    link = secret_dir / "..data_tmp"
    link.symlink_to(data.name)
    link.replace(secret_dir / "..data")
    for name in files:
        if not (secret_dir / name).is_symlink():
            (secret_dir / name).symlink_to(f"..data/{name}")
    for old in secret_dir.glob("..v*"):
        if old != data:
            shutil.rmtree(old)


def test_a_mounted_secret_is_served_and_picked_up_again_when_it_rotates(tmp_path: Path) -> None:
    ca, ca_key = _ca("platform CA")
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    secret = tmp_path / "secret"
    secret.mkdir()
    cert1, key1 = _leaf(ca, ca_key, serial=1001)
    _kubelet_write(secret, {"tls.crt": cert1, "tls.key": key1, "ca.crt": ca_pem}, 1)
    tls = secret_tls(secret, tmp_path / "work")
    # Agents are given the Secret's ca.crt.
    assert tls.ca_cert.read_bytes() == ca_pem
    port, loop, server = _serve_once(tls)
    try:
        assert _handshake(port, tls.ca_cert, SERVICE_NAMES[2], loop).serial_number == 1001
        # Rotation: the same server, without a restart, presents the new certificate once it looked again.
        cert2, key2 = _leaf(ca, ca_key, serial=1002)
        _kubelet_write(secret, {"tls.crt": cert2, "tls.key": key2, "ca.crt": ca_pem}, 2)
        assert _handshake(port, tls.ca_cert, SERVICE_NAMES[2], loop).serial_number == 1001
        assert tls.refresh()
        assert _handshake(port, tls.ca_cert, SERVICE_NAMES[2], loop).serial_number == 1002
        # A half-done rotation (a new certificate with the old key) is not loaded: the last good pair stays.
        cert3, _ = _leaf(ca, ca_key, serial=1003)
        _kubelet_write(secret, {"tls.crt": cert3, "tls.key": key2, "ca.crt": ca_pem}, 3)
        assert not tls.refresh()
        assert _handshake(port, tls.ca_cert, SERVICE_NAMES[2], loop).serial_number == 1002
    finally:
        server.close()
        loop.close()


def test_the_listener_looks_at_the_secret_again_by_itself(tmp_path: Path) -> None:
    ca, ca_key = _ca("platform CA")
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    secret = tmp_path / "secret"
    secret.mkdir()
    cert1, key1 = _leaf(ca, ca_key, serial=2001)
    _kubelet_write(secret, {"tls.crt": cert1, "tls.key": key1, "ca.crt": ca_pem}, 1)
    tls = gateway_tls(GatewayTLSConfig(secret_dir=secret), tmp_path / "data")

    async def main() -> tuple[int, int]:
        listener = Listener(tls, refresh_seconds=0.05)
        await listener.start()
        try:
            client = ssl.create_default_context(cafile=str(tls.ca_cert))

            async def serial() -> int:
                _, writer = await asyncio.open_connection(
                    "127.0.0.1", listener.port, ssl=client, server_hostname=SERVICE_NAMES[0]
                )
                der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
                writer.close()
                return int(x509.load_der_x509_certificate(der).serial_number)

            before = await serial()
            cert2, key2 = _leaf(ca, ca_key, serial=2002)
            _kubelet_write(secret, {"tls.crt": cert2, "tls.key": key2, "ca.crt": ca_pem}, 2)
            for _ in range(200):
                await asyncio.sleep(0.05)
                if (after := await serial()) != before:
                    return before, after
            return before, await serial()
        finally:
            await listener.stop()

    assert asyncio.run(main()) == (2001, 2002)


def test_a_secret_without_ca_crt_hands_out_the_top_of_its_chain(tmp_path: Path) -> None:
    ca, ca_key = _ca("issuing CA")
    cert, key = _leaf(ca, ca_key, serial=7)
    chain = cert + ca.public_bytes(serialization.Encoding.PEM)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "tls.crt").write_bytes(chain)
    (secret / "tls.key").write_bytes(key)
    tls = secret_tls(secret, tmp_path / "work")
    assert tls.ca_cert.read_bytes() == ca.public_bytes(serialization.Encoding.PEM)


def test_a_secret_that_is_not_a_tls_secret_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "tls.crt").write_text("not a certificate")
    with pytest.raises(ValueError, match=r"gateway.tls.secretName.*lacks tls.key.*kubernetes.io/tls"):
        secret_tls(tmp_path / "secret", tmp_path / "work")
    (tmp_path / "secret" / "tls.key").write_text("not a key")
    with pytest.raises(ValueError, match="could not be loaded"):
        secret_tls(tmp_path / "secret", tmp_path / "work")


def test_a_gateway_kubeconfig_carries_the_ca_and_never_skips_verification(tmp_path: Path) -> None:
    tls = own_tls(tmp_path, serving_names("oasis-gateway", "oasis-system"))
    text = build_kubeconfig("https://oasis-gateway.oasis-system.svc/env/x", tls.ca_cert, "t", "default")
    assert "insecure-skip-tls-verify" not in text
    cluster = yaml.safe_load(text)["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == tls.ca_cert.read_bytes()
