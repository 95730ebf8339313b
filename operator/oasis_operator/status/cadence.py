"""When the status writer sends a change: at once, or coalesced with the changes that follow (pure).

Every write of the status makes the API server decode, validate, store and return the whole object and
hands every watcher (kopf first) an event with it; a run at parallelism 4 changes its scenario rows
several times a second. So a change of the rows and their counts alone waits until an interval has
passed since the last write, and goes out then together with whatever changed meanwhile: a person
watching sees a scenario start or finish within about `interval`. Everything else is sent at once: the
first write of a writer, a phase, a condition, the agent, the sandbox server, preflight gaps, the start
and completion times, the summary and the report ConfigMaps.

Deferring rows loses nothing a resume needs: a row says a scenario is judged only after the scenario's
document set is stored, so a resume finds the result of every judged row; a row whose write had not
gone out when the operator died is a scenario that runs again, as one that was in flight does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The status fields whose changes may wait for the next write: the rows and the counts made from them.
DEFERRABLE = frozenset({"scenarios", "progress"})
DEFAULT_INTERVAL = 1.0


def urgent(written: Mapping[str, Any] | None, wire: Mapping[str, Any]) -> bool:
    """Whether going from the status last written (None: nothing written yet) to `wire` must be sent at
    once: yes unless only the rows and their counts differ."""
    if written is None:
        return True
    return any(written.get(key) != wire.get(key) for key in (set(written) | set(wire)) - DEFERRABLE)


@dataclass(frozen=True)
class Cadence:
    """How long a change waits before it is written: at most one deferred write per `interval` seconds."""

    interval: float = DEFAULT_INTERVAL

    def __post_init__(self) -> None:
        if self.interval < 0:
            raise ValueError(f"the status write interval must be 0 or more seconds, not {self.interval}")

    def delay(self, last_sent: float | None, now: float, *, urgent: bool) -> float:
        """Seconds from `now` until the change is sent (0: at once). `last_sent` is when the previous write
        went out (None: none did), on the same clock as `now`."""
        if urgent or last_sent is None:
            return 0.0
        return max(0.0, last_sent + self.interval - now)
