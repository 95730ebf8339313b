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
- `{"kind": "files", "paths": [...], "write": [...]}`: open each path for reading (a directory: list
  it) and each `write` path for appending (writing nothing); prints what it got per path.
- `{"kind": "processes", "pids": [...]}`: read `/proc/<pid>/environ` and `cmdline` of the given pids and
  of every process it can see; prints the pids it sees and every environment it could read that holds a
  variable its own does not.
- `{"kind": "scan", "first", "last"}`: every TCP port of 127.0.0.1 in the range; on each open one, ask
  for Secrets and etcd keys without credentials (TLS without a client certificate, then plain HTTP);
  prints the open ports and every answer that came back 2xx.
"""

from __future__ import annotations

import concurrent.futures
import errno
import http.client
import json
import os
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


def _try(action: Any) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return "ok"


def files_attempt(spec: dict[str, Any]) -> dict[str, Any]:
    """Read (or list) each path and open each `write` path for appending; what worked."""

    def read(path: str) -> None:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as handle:
                handle.read(64)

    def append(path: str) -> None:
        with open(path, "ab"):
            pass

    reads = {p: _try(lambda p=p: read(p)) for p in spec.get("paths", [])}
    writes = {p: _try(lambda p=p: append(p)) for p in spec.get("write", [])}
    return {"read": reads, "write": writes}


def processes_attempt(spec: dict[str, Any]) -> dict[str, Any]:
    """Which processes are visible, and whose environment (with something new in it) could be read."""
    own = set(os.environ)
    me = os.getpid()
    seen = sorted(int(e) for e in os.listdir("/proc") if e.isdigit())
    leaked: dict[str, list[str]] = {}
    refused: dict[str, str] = {}
    for pid in sorted(set(seen) | {int(p) for p in spec.get("pids", [])}):
        if pid == me:
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as handle:
                    data = handle.read()
            except OSError as exc:
                refused[f"{pid}/{part}"] = errno.errorcode.get(exc.errno or 0, "error")
                continue
            words = [w.decode(errors="replace") for w in data.split(b"\0") if w]
            if part == "environ":
                new = sorted({w.split("=", 1)[0] for w in words} - own)
                if new:
                    leaked[f"{pid}/environ"] = new[:10]
            elif words and pid in spec.get("pids", []):
                leaked[f"{pid}/cmdline"] = words[:3]
    return {"seen": seen, "leaked": leaked, "refused": refused}


def _ask(port: int, tls: bool, method: str, path: str, body: str = "") -> tuple[int, Any] | None:
    """One request without credentials; the status and JSON answer, or None when nothing HTTP answered."""
    conn: http.client.HTTPConnection
    if tls:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=3, context=_context(None))
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        conn.request(method, path, body=body or None, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read(BODY_KEPT * 16)
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    try:
        return response.status, json.loads(payload)
    except ValueError:
        return response.status, None


def _is_secret_answer(doc: Any) -> bool:
    """A Secret list of an API server, or a key-value answer of etcd (v3 range or v2 keys)."""
    if not isinstance(doc, dict):
        return False
    header = doc.get("header")
    return (
        doc.get("kind") == "SecretList"
        or (isinstance(header, dict) and "cluster_id" in header)
        or isinstance(doc.get("node"), dict)
    )


SECRET_ASKS = (
    ("GET", "/api/v1/secrets", ""),  # a Kubernetes API server, anonymously
    ("POST", "/v3/kv/range", '{"key": "AA==", "range_end": "AA=="}'),  # etcd v3, every key
    ("GET", "/v2/keys/?recursive=true", ""),  # etcd v2
)


def scan_attempt(spec: dict[str, Any]) -> dict[str, Any]:
    """Connect to every port in the range; on each open one, ask for secrets without credentials."""
    open_ports = []
    for port in range(int(spec.get("first", 1)), int(spec.get("last", 65535)) + 1):
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                open_ports.append(port)

    def ask_all(port: int) -> list[str]:
        found = []
        for tls in (True, False):
            for method, path, body in SECRET_ASKS:
                got = _ask(port, tls, method, path, body)
                if got is not None and 200 <= got[0] < 300 and _is_secret_answer(got[1]):
                    found.append(f"{'https' if tls else 'http'}://127.0.0.1:{port}{path} {got[0]}")
        return found

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        answered = [a for found in pool.map(ask_all, open_ports) for a in found]
    return {"open": open_ports, "answered": answered}


ATTEMPTS = {
    "http": http_attempt,
    "tls": tls_attempt,
    "files": files_attempt,
    "processes": processes_attempt,
    "scan": scan_attempt,
}


def main() -> int:
    spec = json.load(sys.stdin)
    kind = spec.get("kind")
    if kind not in ATTEMPTS:
        print(json.dumps({"error": f"unknown attempt kind {kind!r}: use one of {sorted(ATTEMPTS)}"}))
        return 2
    result = ATTEMPTS[kind](spec)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
