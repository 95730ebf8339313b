"""The port-forward protocol over SPDY/3.1 (`portforward.k8s.io`), served by the gateway itself (pure:
bytes in, bytes out; `connect.py` carries them in the WebSocket).

kubectl opens, per local connection, two streams carrying the headers `streamType` (`error` first,
which it half-closes at once, then `data`), `port` and `requestID`; it waits for each stream's
SYN_REPLY. The kubelet's handler is followed: a stream without a valid `port` or `streamType` is reset,
the two streams of a request id make a pair, a second stream of a type already in the pair is an error
written on the error stream. Once paired, the port is decided (`pod_ports.port_answer`): refused means
the runtime's message on the error stream, the error stream finished and the data stream reset (kubectl
then reports the error and ends); served means every HTTP/1.x request read on the data stream gets the
port's answer, keep-alive honoured, until either side closes, and then both streams are finished.
Client pings are echoed; a GOAWAY ends the session; a malformed frame ends it with a GOAWAY
(protocol error). Nothing is ever connected to: no socket, no process.

`record()` is the evidence: every forwarded connection, its port, what answered and each request seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.gateway.apis import spdy
from oasis_operator.gateway.apis.pod_ports import BAD_REQUEST, PortAnswer, http_response

MAX_REQUEST_HEAD = 64 * 1024  # an HTTP request head longer than this is answered 400 (as Go's server)
MAX_REQUEST_BODY = 1 << 20  # a request body declared longer than this is answered 413, not buffered
MAX_FRAME = 1 << 20  # the longest frame taken from the client (kubectl writes 32 KiB data frames)
CHUNK = 32 * 1024  # the most data sent in one frame
MAX_RECORDED_REQUESTS = 100  # per connection; the count goes on
MAX_RECORDED_CONNECTIONS = 200  # per session; the count goes on
_STREAM_TYPES = ("error", "data")
TOO_LARGE = f"request body over {MAX_REQUEST_BODY} bytes"
TOO_LARGE_RESPONSE = (
    b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\n413 Request Entity Too Large"
)


@dataclass
class _Pair:
    request_id: str
    port: int
    error: int = 0  # stream ids
    data: int = 0
    answer: PortAnswer | None = None
    buffer: bytearray = field(default_factory=bytearray)
    done: bool = False
    record: dict[str, Any] = field(default_factory=dict)


class PortForwardSession:
    """One port-forward connection: feed it the client's bytes, send the bytes it returns."""

    def __init__(self, answer_for: Callable[[int], PortAnswer | str]) -> None:
        self._answer_for = answer_for
        self._reader = spdy.FrameReader(MAX_FRAME)
        self._writer = spdy.FrameWriter()
        self._pairs: dict[str, _Pair] = {}
        self._by_stream: dict[int, _Pair] = {}
        self._last_stream = 0
        self.closed = False
        self.error = ""  # why the session ended, if not by the client's GOAWAY or close
        self.connections: list[dict[str, Any]] = []
        self.connection_count = 0
        self.changes = 0  # how often the record changed: the caller writes it as it goes

    def receive(self, data: bytes) -> list[bytes]:
        """The bytes to send back for `data` (any piece of the client's byte stream)."""
        if self.closed:
            return []
        out: list[spdy.Frame] = []
        try:
            for frame in self._reader.feed(data):
                self._on_frame(frame, out)
                if self.closed:
                    break
        except spdy.SpdyError as exc:
            self.error = f"malformed SPDY: {exc}"
            self.closed = True
            out.append(spdy.GoAway(self._last_stream, spdy.GOAWAY_PROTOCOL_ERROR))
        return [self._writer.encode(f) for f in out]

    def record(self) -> dict[str, Any]:
        """What was forwarded: the connections (port, answer, requests) and how the session ended."""
        ports = sorted({c["port"] for c in self.connections if isinstance(c.get("port"), int)})
        record: dict[str, Any] = {"ports": ports, "connections": self.connections}
        if self.connection_count > len(self.connections):
            record["connection_count"] = self.connection_count
        return record | ({"error": self.error} if self.error else {})

    def _remember(self, connection: dict[str, Any]) -> None:
        self.changes += 1
        self.connection_count += 1
        if len(self.connections) < MAX_RECORDED_CONNECTIONS:
            self.connections.append(connection)

    def _on_frame(self, frame: spdy.Frame, out: list[spdy.Frame]) -> None:
        match frame:
            case spdy.SynStream():
                self._open(frame, out)
            case spdy.Data(stream_id, payload, _):
                pair = self._by_stream.get(stream_id)
                if pair is not None and stream_id == pair.data and not pair.done:
                    pair.buffer += payload
                    self._serve(pair, out, frame.fin)
            case spdy.RstStream(stream_id, _):
                pair = self._by_stream.get(stream_id)
                if pair is not None and not pair.done:
                    self._finish(pair, out, data_end="" if stream_id == pair.data else "fin")
            case spdy.Ping(ping_id) if ping_id % 2 == 1:  # the client's ping: echoed
                out.append(frame)
            case spdy.GoAway():
                self.closed = True
            case _:
                pass  # SETTINGS, WINDOW_UPDATE (spdystream keeps no window), HEADERS, a server ping's echo

    def _open(self, frame: spdy.SynStream, out: list[spdy.Frame]) -> None:
        sid = frame.stream_id
        if sid % 2 == 0 or sid <= self._last_stream:
            out.append(spdy.RstStream(sid, spdy.PROTOCOL_ERROR))
            return
        self._last_stream = sid
        first = {k: v[0] if v else "" for k, v in frame.headers.items()}
        port_text, kind = first.get("port", ""), first.get("streamtype", "")
        problem = ""
        if not port_text:
            problem = '"port" header is required'
        elif not port_text.isdigit() or not 0 < int(port_text) < 65536:
            problem = f"unable to parse {port_text!r} as a port"
        elif kind not in _STREAM_TYPES:
            problem = '"streamType" header is required' if not kind else f'invalid stream type "{kind}"'
        if problem:
            self._remember({"stream": sid, "error": problem})
            out.append(spdy.RstStream(sid, spdy.CANCEL))
            return
        out.append(spdy.SynReply(sid, {}))
        request_id = first.get("requestid") or str(sid if kind == "error" else sid - 2)
        pair = self._pairs.get(request_id)
        if pair is None:
            pair = self._pairs[request_id] = _Pair(request_id, int(port_text))
            pair.record = {"request_id": request_id, "port": pair.port}
            self._remember(pair.record)
        self._by_stream[sid] = pair
        if getattr(pair, kind):
            message = f"error processing stream for request {request_id}: {kind} stream already assigned"
            if pair.error:
                out.append(spdy.Data(pair.error, message.encode()))
            pair.record.setdefault("error", message)
            return
        setattr(pair, kind, sid)
        if pair.error and pair.data:
            self._start(pair, out)

    def _start(self, pair: _Pair, out: list[spdy.Frame]) -> None:
        self.changes += 1
        answer = self._answer_for(pair.port)
        if isinstance(answer, str):
            pair.record.update(answer="refused", error=answer)
            out.append(spdy.Data(pair.error, answer.encode()))
            self._finish(pair, out, data_end="rst")
            return
        pair.answer = answer
        pair.record.update(answer=answer.source, status=answer.status, requests=[])
        self._serve(pair, out, fin=False)

    def _serve(self, pair: _Pair, out: list[spdy.Frame], fin: bool) -> None:
        """Answer the whole requests buffered; finish the pair on a close or the client's FIN."""
        if pair.answer is None:  # not paired yet: keep the bytes
            return
        close = False
        while pair.buffer and not close:
            parsed = _next_request(pair.buffer)
            if parsed is None:
                break
            method, target, close, bad = parsed
            if bad:
                status = 413 if bad == TOO_LARGE else 400
                out.append(spdy.Data(pair.data, TOO_LARGE_RESPONSE if status == 413 else BAD_REQUEST))
                self._note(pair, {"bad_request": bad, "status": status})
                close = True
                break
            response = http_response(pair.answer, method == "HEAD", close)
            out += [spdy.Data(pair.data, response[i : i + CHUNK]) for i in range(0, len(response), CHUNK)]
            self._note(pair, {"method": method, "path": target, "status": pair.answer.status})
        if close or fin:
            self._finish(pair, out, data_end="fin")

    def _note(self, pair: _Pair, request: dict[str, Any]) -> None:
        self.changes += 1
        requests = pair.record.setdefault("requests", [])
        pair.record["request_count"] = pair.record.get("request_count", 0) + 1
        if len(requests) < MAX_RECORDED_REQUESTS:
            requests.append(request)

    @staticmethod
    def _finish(pair: _Pair, out: list[spdy.Frame], data_end: str) -> None:
        """End both streams: the error stream finished, the data stream finished (`fin`), reset
        (`rst`) or left alone (`""`: the client reset it)."""
        pair.done = True
        pair.buffer.clear()
        if pair.error:
            out.append(spdy.Data(pair.error, b"", spdy.FLAG_FIN))
        if pair.data and data_end == "rst":
            out.append(spdy.RstStream(pair.data, spdy.CANCEL))
        elif pair.data and data_end == "fin":
            out.append(spdy.Data(pair.data, b"", spdy.FLAG_FIN))


def _next_request(buffer: bytearray) -> tuple[str, str, bool, str] | None:
    """The next whole HTTP/1.x request in `buffer` (consumed): method, target, whether the connection
    closes after it, and why it is a bad request ("" for a good one); None until it is whole."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > MAX_REQUEST_HEAD:
            return "", "", True, "request head too long"
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    while lines and not lines[0]:
        lines.pop(0)  # blank lines before a request line are ignored (RFC 9112 2.2)
    parts = lines[0].split(" ") if lines else []
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith("HTTP/1."):
        del buffer[:]
        return "", "", True, f"not an HTTP/1.x request line: {(lines[0] if lines else '')[:80]!r}"
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            del buffer[:]
            return parts[0], parts[1], True, f"malformed header line: {line[:80]!r}"
        headers[name.strip().lower()] = value.strip()
    length_text = headers.get("content-length", "0")
    if not length_text.isdigit():
        del buffer[:]
        return parts[0], parts[1], True, "bad Content-Length"
    if int(length_text) > MAX_REQUEST_BODY:
        del buffer[:]
        return parts[0], parts[1], True, TOO_LARGE
    total = end + 4 + int(length_text)
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    if len(buffer) < total and not chunked:
        return None
    del buffer[: len(buffer) if chunked else total]  # a chunked body is not read: the connection closes
    connection = headers.get("connection", "").lower()
    close = chunked or "close" in connection or (parts[2] == "HTTP/1.0" and "keep-alive" not in connection)
    return parts[0], parts[1], close, ""
