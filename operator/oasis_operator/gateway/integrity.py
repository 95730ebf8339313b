"""A hash chain over the gateway record's lines: a record changed other than by its own appends is refused.

Each line the recorder writes is one JSON object; `Chain.seal` appends a last member
`"chain": "<hex>"` where `hex = sha256(previous hex + the line's JSON text before the member)`, starting
from a fixed genesis value. `verify(text, head)` recomputes the chain over a whole record file and
returns the lines without the member; any edited, inserted, removed or reordered line breaks it. A
recorder also keeps its own head (the last value and how many lines it wrote) in memory, so a record
truncated at its end, extended by someone else, or rewritten whole with a recomputed chain is caught as
well while the gateway that wrote it runs. Any break raises `BrokenChainError`, which the reader turns
into an `unreachable` source (→ PROVIDER_FAILURE), never a trusted record.

What it does not cover: a gateway restarted on an existing record trusts the chain it finds (it has no
memory of the head); the data directory is closed to agents (0700, outside every sandbox) for that.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

GENESIS = hashlib.sha256(b"oasis-operator gateway record v1").hexdigest()
_SEAL = re.compile(r',"chain":"([0-9a-f]{64})"\}$')


class BrokenChainError(ValueError):
    """The record is not what the gateway wrote; the message names the first line that is off."""


@dataclass(frozen=True)
class Head:
    """Where a chain stands: its last value and how many lines it covers."""

    value: str = GENESIS
    lines: int = 0


def _link(previous: str, text: str) -> str:
    return hashlib.sha256((previous + text).encode("utf-8")).hexdigest()


class Chain:
    """The running chain of one record file (the caller serialises appends)."""

    def __init__(self, head: Head | None = None) -> None:
        self.head = head or Head()

    def seal(self, text: str) -> str:
        """The line to write for one JSON object `text` (compact, ending in `}`), chain member added."""
        if not (text.startswith("{") and text.endswith("}")) or text == "{}":
            raise ValueError("only a non-empty JSON object can be sealed into the record")
        value = _link(self.head.value, text)
        self.head = Head(value, self.head.lines + 1)
        return f'{text[:-1]},"chain":"{value}"}}'


def verify(text: str, expected: Head | None = None) -> tuple[list[str], Head]:
    """The record's lines without their chain member, and its head; raises `BrokenChainError`.

    `expected` is the writer's own head: the file must end exactly there.
    """
    lines: list[str] = []
    value = GENESIS
    for number, line in enumerate(text.splitlines(), start=1):
        found = _SEAL.search(line)
        if found is None:
            raise BrokenChainError(
                f"record line {number} carries no chain value (not written by the gateway)"
            )
        body = line[: found.start()] + "}"
        value = _link(value, body)
        if found.group(1) != value:
            raise BrokenChainError(
                f"record line {number} was changed, inserted or removed after it was written"
            )
        lines.append(body)
    head = Head(value, len(lines))
    if expected is not None and head != expected:
        raise BrokenChainError(
            f"the record holds {head.lines} lines, the gateway wrote {expected.lines}: it was truncated, "
            "extended or rewritten by something other than the gateway"
        )
    return lines, head
