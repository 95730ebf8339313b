"""One containment probe: what an agent under evaluation tries, the only acceptable outcomes, the record.

The probes themselves are listed by family (`api_probes`, `mcp_probes`, `host_probes`) and gathered in
`probes.PROBES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from oasis_operator.containment.acts import Act


@dataclass(frozen=True)
class Record:
    """Where the gateway must have recorded the attempt: which record, answer, fields and note."""

    where: Literal["self", "neighbour", "unmatched"]
    code: int
    fields: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Probe:
    """One attempt to get out: what the agent tries, the only acceptable outcomes, how to make it."""

    id: str
    attempt: str
    expected: tuple[str, ...]
    act: Act
    record: Record | None = None  # None: the attempt never reaches the gateway
    settle: float = 0.0  # seconds to wait afterwards (the rate-limit probe empties the bucket)
