"""The door's TLS: the gateway's serving certificate, and client certificates asked for but never required.

An agent's own credential is its bearer token; a client certificate at the door is someone else's (the
sandbox API server's admin certificate found in a file, a certificate from the host). The door asks
every client for one (`CERT_OPTIONAL`), so a presented certificate reaches `attribution.py`, which
fingerprints its DER bytes (`sha256:`, never the key, which never leaves the client) and records the
request as `actor=foreign`. A client without a certificate is unaffected.

The standard library verifies a certificate a client sends against the context's trust anchors and
ends the handshake when it does not chain to one; it offers no "ask, accept anything" mode. The anchors
are therefore every authority whose certificates are credentials an agent could borrow: the sandbox
API server's CA (it signs that server's client certificates), the gateway's own CA and the system's
authorities. A certificate of any other issuer (one the agent made itself) authenticates nowhere; its
handshake fails, the request never gets a path, and nothing is served.
"""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import yaml


def sandbox_ca_pem(kubeconfig: Path) -> str | None:
    """The PEM of the CA the kubeconfig's current cluster trusts (`certificate-authority[-data]`)."""
    doc: dict[str, Any] = yaml.safe_load(kubeconfig.read_text()) or {}
    contexts = {c["name"]: c["context"] for c in doc.get("contexts", [])}
    context = contexts.get(doc.get("current-context", ""), {})
    cluster: dict[str, Any] = next(
        (c["cluster"] for c in doc.get("clusters", []) if c["name"] == context.get("cluster")), {}
    )
    if cluster.get("certificate-authority-data"):
        return base64.b64decode(cluster["certificate-authority-data"]).decode()
    if cluster.get("certificate-authority"):
        path = Path(cluster["certificate-authority"])
        return (path if path.is_absolute() else kubeconfig.parent / path).read_text()
    return None


def ask_client_certificates(ctx: ssl.SSLContext, anchors: tuple[str, ...]) -> ssl.SSLContext:
    """Make a live server context ask for (never require) client certificates, trusting `anchors` (PEM)
    beside the authorities it has; handshakes from now on see them."""
    for pem in anchors:
        ctx.load_verify_locations(cadata=pem)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx
