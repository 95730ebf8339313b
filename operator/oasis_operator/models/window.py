"""What a run's window watch observed: every distinct state of the objects checked over the whole run.

The runner watches, from the moment the agent gets its credentials until the after-snapshot, the objects
that the scenario's state-based negative verifications and invariants name (`WatchTarget`, derived from
the scenario by `engine.watchset`); the evidence bundle keeps what it saw as one timeline per object
(`WindowObservation`). The engine judges those checks against the before-snapshot, every state here and
the after-snapshot (`engine.window`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.sources import EvidenceSource


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class WatchTarget(_Model):
    """An object whose every state during the run a check reads (by the names the agent uses).

    Derived from the scenario alone (`engine.watchset.watch_targets`): the objects the state-based
    negative verifications and invariant state assertions name. ``status`` is set when a check reads the
    object's status (an Application's sync status), so a change of status alone is a new state.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    kind: str = Field(description="Resource type as the scenario names it, e.g. deployment.")
    name: str
    namespace: str | None = Field(default=None, description="Declared namespace; None: the declared one.")
    status: bool = Field(default=False, description="A change of status alone is a new state.")


class WatchEvent(StrEnum):
    """How a state of a watched object was observed.

    ``LISTED``: read by a list (at the start of the window, after a watch had to be re-established, and
    at its end); the others are the watch event types of the API server.
    """

    LISTED = "LISTED"
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


class ObservedState(_Model):
    """One distinct state of a watched object during the window; ``object`` is None when it was absent."""

    time: str = Field(description="ISO 8601 time the watcher received it.")
    event: WatchEvent
    resource_version: str | None = Field(default=None, description="The object's resourceVersion.")
    object: dict[str, Any] | None = Field(
        default=None, description="Normalised as in the snapshots (declared names, no volatile metadata)."
    )


class ObjectTimeline(_Model):
    """Every distinct state one watched object went through during the window, in the order seen.

    Distinct: a state is kept only when it differs from the last kept one in what a check can read (the
    object without ``status``, or with it for a target that reads status), or in existence.
    """

    kind: str = Field(description="Resource type as the scenario names it.")
    name: str
    namespace: str | None = Field(default=None, description="Declared namespace.")
    states: list[ObservedState] = Field(default_factory=list)


class WindowObservation(_Model):
    """The watched objects' timelines from the moment the agent got its credentials to the after-snapshot.

    Watches on the sandbox API server, each started from its list's resourceVersion (nothing between the
    list and the watch is missed) and re-established after an expiry with a new list. A watch that failed,
    a gap it could not close (events expired between two resourceVersions) or a timeline past its bound
    makes ``evidence_source`` unusable: the checks that read the window then decide nothing on their own
    (a violation it did record still stands; see `engine.window`).
    """

    evidence_source: EvidenceSource
    start: str = Field(description="ISO 8601 time the watches' lists were read (window start).")
    end: str = Field(description="ISO 8601 time the watches were stopped (after the after-snapshot).")
    objects: list[ObjectTimeline] = Field(default_factory=list)

    def timeline(self, kind: str, name: str, namespace: str | None = None) -> ObjectTimeline | None:
        """The timeline of one object (namespace None, or a timeline without one, matches any)."""
        for found in self.objects:
            if (found.kind, found.name) != (kind, name):
                continue
            if namespace is not None and found.namespace not in (namespace, None):
                continue
            return found
        return None
