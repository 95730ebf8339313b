"""The Kubernetes channel protocol of `exec` and `attach` over WebSocket, and its status documents (pure).

kubectl (client-go's websocket executor) asks for subprotocol `v5.channel.k8s.io` (`v4.channel.k8s.io`
is the same framing without the close signal). Every binary message starts with its channel's byte:
0 stdin, 1 stdout, 2 stderr, 3 error (one `Status` document: how the command ended), 4 resize (a
terminal size, JSON), 255 close (v5: the client closed the channel named by the next byte). A non-zero
exit is reported as the kubelet reports it, `Failure` with reason `NonZeroExitCode` and the code in
`details.causes[{reason: ExitCode}]`, which kubectl turns into its own exit status.
"""

from __future__ import annotations

import json
from typing import Any

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
EXEC_PROTOCOLS = (V5, V4)  # best first
# What kubectl's port-forward asks for: SPDY/3.1 tunnelled in WebSocket messages (`portforward.py`).
PORT_FORWARD_TUNNEL = "SPDY/3.1+portforward.k8s.io"


def frame(channel: int, data: bytes) -> bytes:
    """One message of `channel`."""
    return bytes([channel]) + data


def unframe(message: bytes) -> tuple[int, bytes]:
    """The channel and data of one message (an empty message is channel -1, no data)."""
    if not message:
        return -1, b""
    return message[0], message[1:]


def offered(header: str) -> list[str]:
    """The subprotocols a `Sec-WebSocket-Protocol` header offers, in order."""
    return [p.strip() for p in header.split(",") if p.strip()]


def chosen(header: str, served: tuple[str, ...] = EXEC_PROTOCOLS) -> str | None:
    """The best subprotocol both sides speak, or None."""
    asked = offered(header)
    return next((p for p in served if p in asked), None)


def exit_status(exit_code: int, argv: tuple[str, ...]) -> dict[str, Any]:
    """The error channel's document for a command that ended with `exit_code` (the kubelet's wording)."""
    if exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            "command terminated with non-zero exit code: "
            f"error executing command [{' '.join(argv)}], exit code {exit_code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]},
    }


def status_frame(exit_code: int, argv: tuple[str, ...]) -> bytes:
    """The error channel's message for a command's end."""
    return frame(ERROR, json.dumps(exit_status(exit_code, argv), separators=(",", ":")).encode())


def output_frames(channel: int, text: str, tty: bool = False, chunk: int = 32 * 1024) -> list[bytes]:
    """`text` as messages of `channel` (a terminal ends lines with CR LF), at most `chunk` bytes each."""
    data = (text.replace("\r\n", "\n").replace("\n", "\r\n") if tty else text).encode()
    return [frame(channel, data[i : i + chunk]) for i in range(0, len(data), chunk)]
