"""SPDY/3.1 framing (pure): what `kubectl port-forward` speaks inside its WebSocket.

kubectl 1.37 (client-go's tunnelling dialer, github.com/moby/spdystream underneath) opens a WebSocket
with subprotocol `SPDY/3.1+portforward.k8s.io` and writes a SPDY/3.1 byte stream in its binary
messages; a message boundary means nothing, so `FrameReader` buffers bytes and yields whole frames.

A frame is 8 bytes of header then a payload. A control frame's header is `1 | version(15) | type(16) |
flags(8) | length(24)`; a data frame's is `0 | stream id(31) | flags(8) | length(24)`. Header blocks
(SYN_STREAM, SYN_REPLY, HEADERS) are `count, (name length, name, value length, value)*` (32-bit
lengths, lower-case names, several values of a name joined by NUL), zlib-compressed with the SPDY/3
dictionary as preset dictionary, one compression context per direction kept across the whole
connection, each block ending with a sync flush. Nothing here reads a socket: the session
(`portforward.py`) feeds bytes in and sends the bytes `FrameWriter` gives it. A malformed frame raises
`SpdyError` (the session then ends the connection with a GOAWAY, as a protocol error).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
# RST_STREAM status codes (SPDY/3 section 2.6.3).
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL, INTERNAL_ERROR = 1, 2, 3, 5, 6
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR = 0, 1
MAX_LENGTH = (1 << 24) - 1  # a frame's 24-bit length
MAX_HEADER_BLOCK = 1 << 20  # the most a decompressed header block may be (spdystream's field limit)
MAX_HEADERS = 1000

Headers = dict[str, tuple[str, ...]]

# The SPDY/3 preset dictionary (SPDY/3 section 2.6.10.1): length-prefixed header names and values,
# then status lines, dates and common values run together. Its Adler-32 is 0xe3c6a7c2.
_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language "
    "accept-ranges age allow authorization cache-control connection content-base content-encoding "
    "content-language content-length content-location content-md5 content-range content-type date "
    "etag expect expires from host if-match if-modified-since if-none-match if-range "
    "if-unmodified-since last-modified location max-forwards pragma proxy-authenticate "
    "proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status 200_OK version HTTP/1.1 url "
    "public set-cookie keep-alive origin"
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 "
    "Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service "
    "UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, "
    "Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,"
    "application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch"
    "charset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = (
    b"".join(struct.pack(">I", len(w)) + w.replace("_", " ").encode() for w in _WORDS.split())
    + _TAIL.encode()
)


class SpdyError(ValueError):
    """A frame that does not follow SPDY/3.1; the connection cannot go on."""


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    flags: int = 0
    associated: int = 0
    priority: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers
    flags: int = 0


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    flags: int = 0


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: tuple[tuple[int, int, int], ...]  # (flags, id, value)
    flags: int = 0


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good: int
    status: int = GOAWAY_OK


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    flags: int = 0

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


Frame = SynStream | SynReply | HeadersFrame | RstStream | Settings | Ping | GoAway | WindowUpdate | Data


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_LENGTH:
        raise SpdyError(f"a control frame of {len(payload)} bytes is longer than SPDY allows")
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def encode_block(headers: Headers) -> bytes:
    """A header block, uncompressed (names lower-cased, sorted, values joined by NUL)."""
    out = [struct.pack(">I", len(headers))]
    for name in sorted(headers):
        key, value = name.lower().encode(), "\x00".join(headers[name]).encode()
        out += [struct.pack(">I", len(key)), key, struct.pack(">I", len(value)), value]
    return b"".join(out)


def decode_block(block: bytes) -> Headers:
    """The headers of an uncompressed header block; SpdyError for one that does not parse."""
    view, pos = memoryview(block), 0

    def take(n: int) -> bytes:
        nonlocal pos
        if n > len(block) - pos:
            raise SpdyError("a header block ends inside a header")
        pos += n
        return bytes(view[pos - n : pos])

    (count,) = struct.unpack(">I", take(4))
    if count > MAX_HEADERS:
        raise SpdyError(f"a header block declares {count} headers (at most {MAX_HEADERS})")
    headers: Headers = {}
    for _ in range(count):
        (size,) = struct.unpack(">I", take(4))
        name = take(size).decode("utf-8", "replace").lower()
        (size,) = struct.unpack(">I", take(4))
        value = take(size).decode("utf-8", "replace")
        if not name or name in headers:
            raise SpdyError(f"a header block has an empty or repeated header name {name!r}")
        headers[name] = tuple(value.split("\x00"))
    if pos != len(block):
        raise SpdyError("a header block has bytes after its last header")
    return headers


class FrameWriter:
    """Encodes frames for one direction; its header compression context lives as long as it does."""

    def __init__(self) -> None:
        self._zlib = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 9, zdict=DICTIONARY)

    def _compressed(self, headers: Headers) -> bytes:
        return self._zlib.compress(encode_block(headers)) + self._zlib.flush(zlib.Z_SYNC_FLUSH)

    def encode(self, frame: Frame) -> bytes:
        """The bytes of one frame."""
        match frame:
            case Data(stream_id, data, flags):
                if not 0 < stream_id < 1 << 31 or len(data) > MAX_LENGTH:
                    raise SpdyError("a data frame needs a stream id and at most 2^24-1 bytes")
                return struct.pack(">II", stream_id, (flags << 24) | len(data)) + data
            case SynStream(stream_id, headers, flags, associated, priority):
                fixed = struct.pack(">IIBB", stream_id, associated, (priority & 7) << 5, 0)
                return _control(SYN_STREAM, flags, fixed + self._compressed(headers))
            case SynReply(stream_id, headers, flags):
                return _control(SYN_REPLY, flags, struct.pack(">I", stream_id) + self._compressed(headers))
            case HeadersFrame(stream_id, headers, flags):
                return _control(HEADERS, flags, struct.pack(">I", stream_id) + self._compressed(headers))
            case RstStream(stream_id, status):
                return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))
            case Settings(entries, flags):
                body = b"".join(struct.pack(">II", (f << 24) | i, v) for f, i, v in entries)
                return _control(SETTINGS, flags, struct.pack(">I", len(entries)) + body)
            case Ping(ping_id):
                return _control(PING, 0, struct.pack(">I", ping_id))
            case GoAway(last_good, status):
                return _control(GOAWAY, 0, struct.pack(">II", last_good, status))
            case WindowUpdate(stream_id, delta):
                return _control(WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))
        raise SpdyError(f"not a SPDY frame: {frame!r}")


_FIXED_LENGTHS = {RST_STREAM: 8, PING: 4, GOAWAY: 8, WINDOW_UPDATE: 8}
_BLOCK_OFFSETS = {SYN_STREAM: 10, SYN_REPLY: 4, HEADERS: 4}


class FrameReader:
    """Decodes the frames of one direction from bytes fed in pieces of any size."""

    def __init__(self, max_length: int = MAX_LENGTH) -> None:
        self._buffer = bytearray()
        self._zlib = zlib.decompressobj(zdict=DICTIONARY)
        self._max = max_length

    @property
    def pending(self) -> int:
        """Bytes fed but not yet part of a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        """The whole frames `data` completes, in order; SpdyError at the first malformed one."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            first, flags_length = struct.unpack_from(">II", self._buffer)
            flags, length = flags_length >> 24, flags_length & MAX_LENGTH
            if length > self._max:
                raise SpdyError(f"a frame of {length} bytes is longer than the {self._max} accepted")
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            if first & 0x80000000:
                frame = self._control((first >> 16) & 0x7FFF, first & 0xFFFF, flags, payload)
                if frame is not None:
                    frames.append(frame)
            elif first == 0:
                raise SpdyError("a data frame for stream 0")
            else:
                frames.append(Data(first, payload, flags))
        return frames

    def _headers(self, block: bytes) -> Headers:
        try:
            plain = self._zlib.decompress(block, MAX_HEADER_BLOCK + 1)
        except zlib.error as exc:
            raise SpdyError(f"a header block does not decompress: {exc}") from None
        if len(plain) > MAX_HEADER_BLOCK or self._zlib.unconsumed_tail:
            raise SpdyError(f"a header block is longer than {MAX_HEADER_BLOCK} bytes")
        return decode_block(plain)

    def _control(self, version: int, kind: int, flags: int, payload: bytes) -> Frame | None:
        if version != VERSION:
            raise SpdyError(f"SPDY version {version} is not served (only {VERSION})")
        size = _FIXED_LENGTHS.get(kind)
        if size is not None and len(payload) != size:
            raise SpdyError(f"a control frame of type {kind} must be {size} bytes, not {len(payload)}")
        offset = _BLOCK_OFFSETS.get(kind)
        if offset is not None:
            if len(payload) < offset:
                raise SpdyError(f"a control frame of type {kind} is too short ({len(payload)} bytes)")
            stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
            headers = self._headers(payload[offset:])  # always, to keep the shared context in step
            if stream_id == 0:
                raise SpdyError(f"a control frame of type {kind} for stream 0")
            if kind == SYN_STREAM:
                associated = struct.unpack_from(">I", payload, 4)[0] & 0x7FFFFFFF
                return SynStream(stream_id, headers, flags, associated, payload[8] >> 5)
            return (SynReply if kind == SYN_REPLY else HeadersFrame)(stream_id, headers, flags)
        if kind == RST_STREAM:
            stream_id, status = struct.unpack(">II", payload)
            return RstStream(stream_id & 0x7FFFFFFF, status)
        if kind == SETTINGS:
            if len(payload) < 4 or (len(payload) - 4) != struct.unpack_from(">I", payload)[0] * 8:
                raise SpdyError("a SETTINGS frame's count does not match its length")
            pairs = struct.iter_unpack(">II", payload[4:])
            return Settings(tuple((fi >> 24, fi & 0xFFFFFF, v) for fi, v in pairs), flags)
        if kind == PING:
            return Ping(struct.unpack(">I", payload)[0])
        if kind == GOAWAY:
            last_good, status = struct.unpack(">II", payload)
            return GoAway(last_good & 0x7FFFFFFF, status)
        if kind == WINDOW_UPDATE:
            stream_id, delta = struct.unpack(">II", payload)
            return WindowUpdate(stream_id & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        return None  # an unknown control frame type is ignored (SPDY/3 section 2.2.1)
