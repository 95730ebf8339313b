"""The agent side of a containment probe: one network attempt, run as its own process.

Runs as a script (`python attempt.py < spec.json`) under the scrubbed environment an agent gets, so it
imports nothing but the standard library. It sends exactly the bytes it is told to (no client-side path
normalisation: `..` and `%2e%2e` reach the server as written) and prints what came back as JSON:

- `{"kind": "http", "url", "method", "headers", "body", "body_size", "ca", "repeat", "until"}`: HTTPS
  requests on one connection (`repeat` times, stopping at status `until`); without `ca` the server's
  certificate is not checked, as an attacker without the CA would do. Prints the status codes, the last
  answer's headers and the start of its body.
- `{"kind": "tls", "host", "port"}`: a TLS handshake without a client certificate, then an HTTP request;
  prints `closed` (nothing listens), `tls-refused` (handshake or first read refused) or `answered`.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import sys
from typing import Any
from urllib.parse import urlsplit

TIMEOUT = 10.0
BODY_KEPT = 4096


def _context(ca: str | None) -> ssl.SSLContext:
    if ca:
        return ssl.create_default_context(cafile=ca)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def http_attempt(spec: dict[str, Any]) -> dict[str, Any]:
    """Send the request(s); the codes, last headers and body (or the error that stopped them)."""
    url = urlsplit(spec["url"])
    path = url.path + (f"?{url.query}" if url.query else "")
    body: bytes | None = spec.get("body", "").encode() or None
    if spec.get("body_size"):
        body = b"x" * int(spec["body_size"])
    headers = {"Accept": "application/json", **spec.get("headers", {})}
    if body is not None:
        headers.setdefault("Content-Type", "application/json")
    conn = http.client.HTTPSConnection(
        url.hostname or "127.0.0.1", url.port or 443, timeout=TIMEOUT, context=_context(spec.get("ca"))
    )
    codes: list[int] = []
    result: dict[str, Any] = {"codes": codes, "headers": {}, "body": "", "error": None}
    try:
        for _ in range(int(spec.get("repeat", 1))):
            conn.request(spec.get("method", "GET"), path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            codes.append(response.status)
            result["headers"] = {k.lower(): v for k, v in response.getheaders()}
            result["body"] = payload[:BODY_KEPT].decode("utf-8", errors="replace")
            if response.status == spec.get("until"):
                break
    except (OSError, http.client.HTTPException) as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return result


def tls_attempt(spec: dict[str, Any]) -> dict[str, Any]:
    """Handshake without a client certificate and ask for something; how far it got."""
    host, port = spec.get("host", "127.0.0.1"), int(spec["port"])
    try:
        raw = socket.create_connection((host, port), timeout=TIMEOUT)
    except OSError as exc:
        return {"outcome": "closed", "detail": f"{type(exc).__name__}: {exc}"}
    try:
        with _context(None).wrap_socket(raw, server_hostname=host) as tls:
            tls.sendall(f"GET /version HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            answer = tls.recv(BODY_KEPT)
    except OSError as exc:  # ssl.SSLError (an alert), a reset or a timeout: the server did not let us in
        return {"outcome": "tls-refused", "detail": f"{type(exc).__name__}: {exc}"}
    finally:
        raw.close()
    if not answer:
        return {"outcome": "tls-refused", "detail": "the server closed the connection without an answer"}
    return {"outcome": "answered", "detail": answer.decode("utf-8", errors="replace")[:200]}


def main() -> int:
    spec = json.load(sys.stdin)
    kind = spec.get("kind")
    if kind == "http":
        result = http_attempt(spec)
    elif kind == "tls":
        result = tls_attempt(spec)
    else:
        print(json.dumps({"error": f"unknown attempt kind {kind!r}: use http or tls"}))
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
