"""What answers on a pod's port through `kubectl port-forward` (pure): the twin's declared state, never a
socket.

In order: the scenario's declared answer for the pod and port (`connect.port_forward`, first match)
answers every HTTP request; else a container that declares the port (`ports[].containerPort`) and is
running answers 200 when the pod is Ready and 503 when it is not (failing readiness); a container that
is not running (crash loop, waiting, terminated) or a port no container declares is refused as the
container runtime refuses a connection to a port nobody listens on: containerd's words, which the
kubelet writes on the port-forward error stream (`error forwarding port 80 to pod <sandbox>, uid : ...
connection refused`). The sandbox id and network namespace in them are derived from the pod's uid, so
the same pod always gets the same words.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from oasis_operator.models.connect import ConnectGrants


@dataclass(frozen=True)
class PortAnswer:
    """The HTTP response a port gives to every request, and where it came from."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)
    source: str = "default"  # declared | default


def reason(status: int) -> str:
    """The reason phrase of an HTTP status (`Status` for a code with none)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


def refused_message(pod: dict[str, Any], port: int) -> str:
    """containerd's words, as the kubelet writes them on the error stream, for a port nobody listens on."""
    uid = str((pod.get("metadata") or {}).get("uid") or (pod.get("metadata") or {}).get("name") or "")
    sandbox = hashlib.sha256(f"sandbox/{uid}".encode()).hexdigest()
    net = hashlib.sha256(f"netns/{uid}".encode()).hexdigest()
    netns = f"/var/run/netns/cni-{net[:8]}-{net[8:12]}-{net[12:16]}-{net[16:20]}-{net[20:32]}"
    return (
        f"error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network "
        f'namespace "{netns}": failed to connect to localhost:{port} inside namespace "{sandbox}", '
        f"IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused "
        f"IPv6 dial tcp6 [::1]:{port}: connect: connection refused "
    )


def _listener(pod: dict[str, Any], port: int) -> str | None:
    """The container that declares `port`, or None."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if isinstance(declared, dict) and declared.get("containerPort") == port:
                return str(container.get("name") or "")
    return None


def _running(pod: dict[str, Any], container: str) -> bool:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if isinstance(status, dict) and status.get("name") == container:
            return "running" in (status.get("state") or {})
    return False


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict)
    )


def port_answer(
    connect: ConnectGrants | None, pod: dict[str, Any], name: str, namespace: str, port: int
) -> PortAnswer | str:
    """What `port` of `pod` (declared `name` and `namespace`) answers, or the error-stream message of a
    refused connection."""
    declared = connect.port_answer(name, namespace, port) if connect else None
    if declared is not None:
        return PortAnswer(declared.status, declared.body, dict(declared.headers), "declared")
    container = _listener(pod, port)
    if container is None or not _running(pod, container):
        return refused_message(pod, port)
    if _ready(pod):
        return PortAnswer(200, "OK\n", {"Content-Type": "text/plain; charset=utf-8"})
    return PortAnswer(503, "Service Unavailable\n", {"Content-Type": "text/plain; charset=utf-8"})


def http_response(answer: PortAnswer, head_only: bool, close: bool) -> bytes:
    """The bytes of one HTTP/1.1 response (no Date: the same request gets the same bytes)."""
    body = answer.body.encode()
    headers = {k: v for k, v in answer.headers.items() if k.lower() not in {"content-length", "connection"}}
    headers.setdefault("Content-Type", "text/plain; charset=utf-8")
    headers["Content-Length"] = str(len(body))
    if close:
        headers["Connection"] = "close"
    head = f"HTTP/1.1 {answer.status} {reason(answer.status)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode() + (b"" if head_only else body)


BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"400 Bad Request"
)
