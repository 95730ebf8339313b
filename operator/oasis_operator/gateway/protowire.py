"""Namespace translation inside Kubernetes protobuf request bodies, without their schemas.

Current kubectl sends some requests (access reviews, token requests) as protobuf. Without the generated
schemas the gateway cannot convert them to JSON, but it does not need to: it walks the protobuf wire
format, and replaces every length-delimited field whose bytes are exactly a declared name by the sandbox
name, re-encoding the lengths of the enclosing messages. A declared name is only ever replaced as a whole
field value, never inside other text.
"""

from __future__ import annotations

from collections.abc import Callable

K8S_MAGIC = b"k8s\x00"
_MAX_DEPTH = 32


class _MalformedError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _MalformedError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _rewrite_message(data: bytes, translate: Callable[[bytes], bytes | None], depth: int) -> bytes:
    """Rewrite one message; raises `_MalformedError` when `data` is not a well-formed message."""
    if depth > _MAX_DEPTH:
        raise _MalformedError("too deep")
    out = bytearray()
    pos = 0
    while pos < len(data):
        key, after_key = _varint(data, pos)
        wire, field = key & 7, key >> 3
        if field == 0:
            raise _MalformedError("field 0")
        if wire == 0:
            _, end = _varint(data, after_key)
            out += data[pos:end]
        elif wire == 1:
            end = after_key + 8
            out += data[pos:end]
        elif wire == 5:
            end = after_key + 4
            out += data[pos:end]
        elif wire == 2:
            length, start = _varint(data, after_key)
            end = start + length
            if end > len(data):
                raise _MalformedError("length beyond end")
            payload = _rewrite_field(data[start:end], translate, depth)
            out += data[pos:after_key] + _encode_varint(len(payload)) + payload
        else:
            raise _MalformedError(f"wire type {wire}")
        if end > len(data):
            raise _MalformedError("truncated field")
        pos = end
    return bytes(out)


def _rewrite_field(payload: bytes, translate: Callable[[bytes], bytes | None], depth: int) -> bytes:
    replaced = translate(payload)
    if replaced is not None:
        return replaced
    if not payload:
        return payload
    try:
        return _rewrite_message(payload, translate, depth + 1)
    except _MalformedError:
        return payload  # a string or bytes value, not a message


def rewrite_protobuf(body: bytes, translate: Callable[[bytes], bytes | None]) -> bytes:
    """Translate exact-match string fields of a Kubernetes protobuf body (magic prefix + Unknown)."""
    if not body.startswith(K8S_MAGIC):
        return body
    try:
        return K8S_MAGIC + _rewrite_message(body[len(K8S_MAGIC) :], translate, 0)
    except _MalformedError:
        return body
