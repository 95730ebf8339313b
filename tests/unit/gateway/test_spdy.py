"""SPDY/3.1 framing: every frame kubectl's port-forward exchanges round-trips, header blocks share one
compression context per direction, and a malformed frame is a clean `SpdyError` (never another error)."""

from __future__ import annotations

import struct
import zlib

import pytest

from oasis_operator.gateway.apis import spdy
from oasis_operator.gateway.apis.spdy import (
    Data,
    FrameReader,
    FrameWriter,
    GoAway,
    HeadersFrame,
    Ping,
    RstStream,
    Settings,
    SpdyError,
    SynReply,
    SynStream,
    WindowUpdate,
)

KUBECTL_HEADERS = {"streamtype": ("error",), "port": ("8080",), "requestid": ("0",)}


def test_the_dictionary_is_the_spdy3_one() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2  # the Adler-32 the SPDY/3 spec gives
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b",utf-,*,enq=0.")


FRAMES = [
    SynStream(1, KUBECTL_HEADERS),
    SynStream(3, {"streamtype": ("data",), "port": ("8080",), "requestid": ("0",)}, flags=spdy.FLAG_FIN,
              associated=1, priority=7),
    SynReply(1, {}),
    SynReply(3, {"x-several": ("a", "b")}, flags=spdy.FLAG_FIN),
    HeadersFrame(5, {"a": ("1",)}),
    Data(3, b"GET / HTTP/1.1\r\n\r\n"),
    Data(1, b"", flags=spdy.FLAG_FIN),
    RstStream(3, spdy.CANCEL),
    Settings(((0, 4, 100), (1, 7, 65536))),
    Ping(1),
    GoAway(3, spdy.GOAWAY_PROTOCOL_ERROR),
    WindowUpdate(3, 65536),
]  # fmt: skip


def test_every_frame_round_trips_whatever_the_pieces_it_arrives_in() -> None:
    writer = FrameWriter()
    wire = b"".join(writer.encode(f) for f in FRAMES)
    whole = FrameReader().feed(wire)
    assert whole == FRAMES
    reader, frames = FrameReader(), []
    for i in range(len(wire)):  # one byte per WebSocket message: boundaries mean nothing
        frames += reader.feed(wire[i : i + 1])
    assert frames == FRAMES
    assert reader.pending == 0


def test_the_frame_header_is_the_spdy3_layout() -> None:
    ping = FrameWriter().encode(Ping(7))
    assert ping == bytes.fromhex("80030006 00000004 00000007")
    data = FrameWriter().encode(Data(3, b"ab", spdy.FLAG_FIN))
    assert data == bytes.fromhex("00000003 01000002") + b"ab"
    rst = FrameWriter().encode(RstStream(5, spdy.CANCEL))
    assert rst == bytes.fromhex("80030003 00000008 00000005 00000005")


def test_header_blocks_share_one_compression_context_per_direction() -> None:
    writer = FrameWriter()
    first, second = writer.encode(SynStream(1, KUBECTL_HEADERS)), writer.encode(SynStream(3, KUBECTL_HEADERS))
    assert len(second) < len(first)  # the second block refers back to the first
    reader = FrameReader()
    assert reader.feed(first + second) == [SynStream(1, KUBECTL_HEADERS), SynStream(3, KUBECTL_HEADERS)]
    with pytest.raises(SpdyError, match="does not decompress"):
        FrameReader().feed(second)  # alone, without the context the first built
    # The block starts a zlib stream whose preset dictionary is the SPDY one (FDICT set, its Adler-32).
    block = first[18:]
    assert block[1] & 0x20
    assert struct.unpack(">I", block[2:6])[0] == zlib.adler32(spdy.DICTIONARY)


def test_an_unknown_control_frame_is_skipped() -> None:
    unknown = struct.pack(">HHI", 0x8003, 0x00FF, 2) + b"xx"
    assert FrameReader().feed(unknown + FrameWriter().encode(Ping(1))) == [Ping(1)]


def _control(kind: int, payload: bytes, version: int = 3, flags: int = 0) -> bytes:
    return struct.pack(">HHI", 0x8000 | version, kind, (flags << 24) | len(payload)) + payload


def _block(raw: bytes) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zdict=spdy.DICTIONARY)
    return z.compress(raw) + z.flush(zlib.Z_SYNC_FLUSH)


@pytest.mark.parametrize(
    ("wire", "words"),
    [
        (_control(spdy.PING, b"\x00\x00\x00\x01", version=2), "SPDY version 2 is not served"),
        (_control(spdy.PING, b"\x00\x00\x01"), "must be 4 bytes, not 3"),
        (_control(spdy.RST_STREAM, b"\x00" * 4), "must be 8 bytes"),
        (_control(spdy.SETTINGS, struct.pack(">I", 2) + b"\x00" * 8), "count does not match"),
        (_control(spdy.SYN_STREAM, b"\x00\x00\x00\x01"), "too short"),
        (_control(spdy.SYN_STREAM, struct.pack(">IIH", 1, 0, 0) + b"not zlib"), "does not decompress"),
        (_control(spdy.SYN_REPLY, struct.pack(">I", 0) + _block(struct.pack(">I", 0))), "for stream 0"),
        (_control(spdy.SYN_REPLY, struct.pack(">I", 1) + _block(struct.pack(">II", 1, 9) + b"ab")),
         "ends inside a header"),
        (_control(spdy.SYN_REPLY, struct.pack(">I", 1) + _block(struct.pack(">I", 0) + b"extra")),
         "bytes after its last header"),
        (_control(spdy.SYN_REPLY, struct.pack(">I", 1) + _block(struct.pack(">I", 5000))), "5000 headers"),
        (_control(spdy.SYN_REPLY, struct.pack(">I", 1) + _block(struct.pack(">I", 2) + (
            struct.pack(">I", 1) + b"a" + struct.pack(">I", 0)) * 2)), "repeated header name 'a'"),
        (struct.pack(">II", 0, 1) + b"x", "a data frame for stream 0"),
        (struct.pack(">II", 1, 1 << 20) + b"x", "longer than the 65536 accepted"),
    ],
)  # fmt: skip
def test_a_malformed_frame_is_a_clean_spdy_error(wire: bytes, words: str) -> None:
    with pytest.raises(SpdyError, match=words):
        FrameReader(max_length=65536).feed(wire)


def test_a_header_block_bomb_is_refused_without_inflating_it() -> None:
    huge = struct.pack(">II", 1, 1) + b"a" + struct.pack(">I", 8 << 20) + b"\x00" * (8 << 20)
    frame = _control(spdy.SYN_REPLY, struct.pack(">I", 1) + _block(huge))
    with pytest.raises(SpdyError, match="longer than 1048576 bytes"):
        FrameReader().feed(frame)


def test_a_frame_the_writer_cannot_encode_is_an_error() -> None:
    with pytest.raises(SpdyError, match="needs a stream id"):
        FrameWriter().encode(Data(0, b"x"))
