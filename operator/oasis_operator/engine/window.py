"""The whole window counts: invariants judged on every state an object went through, not only the ends.

A state-based negative verification ("<name> replica count unchanged", "<type> still exists", "configmap
data unchanged …", "no label or annotation changes on <name>", "deployment image unchanged", "gitops sync
status unchanged") and an invariant state assertion (``condition: unchanged``, ``labels_unchanged``,
``exists`` of an object that was there before) hold only if they hold against the before-snapshot at
every moment of the run: each state the bundle's ``watched`` timeline recorded while the agent worked,
then the after-snapshot. A violation seen at any moment stays a violation even when the state recovers;
the check's detail names the time of the first violating state, and its evidence cites that state
(:func:`state_ref`), which the report's timeline places at that time.

Which objects are watched is decided from the scenario alone: each such check declares its targets
(`Check.watches`), and `engine.watchset` collects them for the runner before the agent starts.

A bundle without a ``watched`` observation (recorded before watches existed) is judged on the
before/after snapshots, as then. One with an observation that is not usable (a watch failed, events were
lost and could not be recovered, a timeline past its bound) or that lacks a target the checks need,
cannot show the invariants held: :func:`window_gap` says why, and the scenario is PROVIDER_FAILURE unless a
violation was seen anyway (what was recorded stands), never PASS.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from oasis_operator.engine.context import EvidenceView
from oasis_operator.models.window import ObservedState, WatchTarget

# How a check cites a watched state: `window <type>/<name> <EVENT> rv=<rv> at <time>`.
STATE_REF = re.compile(r"^window (?P<what>\S+ \S+(?: rv=\S+)?) at (?P<time>\S+)$")


@dataclass(frozen=True)
class Moment:
    """One state an invariant is checked on: a watched state (with its time) or the after-snapshot."""

    object: dict[str, Any] | None
    state: ObservedState | None = None  # None: the after-snapshot

    @property
    def watched(self) -> bool:
        return self.state is not None


def state_ref(kind: str, name: str, state: ObservedState) -> str:
    """The evidence reference of one watched state (parsed back by :data:`STATE_REF`)."""
    version = f" rv={state.resource_version}" if state.resource_version else ""
    return f"window {kind}/{name} {state.event.value}{version} at {state.time}"


def moments(view: EvidenceView, kind: str, name: str, namespace: str | None) -> list[Moment]:
    """The states after the before-snapshot to check an invariant on: watched states in order, then after."""
    watched = view.bundle.watched
    timeline = watched.timeline(kind, name, namespace) if watched is not None else None
    found = [Moment(state.object, state) for state in (timeline.states if timeline is not None else [])]
    return [*found, Moment(view.after.object(kind, name, namespace))]


@dataclass(frozen=True)
class Departure:
    """The first moment an invariant did not hold, and whether the end state holds it again."""

    moment: Moment
    recovered: bool

    def when(self) -> str:
        """`` at <time>`` (and the recovery) for a watched state; empty for the after-snapshot."""
        state = self.moment.state
        if state is None:
            return ""
        return f" at {state.time}" + ("; as before again by the end of the run" if self.recovered else "")

    def evidence(self, kind: str, name: str) -> tuple[str, ...]:
        state = self.moment.state
        return (state_ref(kind, name, state),) if state is not None else ()


def first_departure(
    view: EvidenceView,
    kind: str,
    name: str,
    namespace: str | None,
    holds: Callable[[dict[str, Any] | None], bool],
) -> Departure | None:
    """The first moment (watched states, then after) at which `holds` is false; None when it always holds."""
    seen = moments(view, kind, name, namespace)
    for moment in seen:
        if not holds(moment.object):
            return Departure(moment, recovered=moment.watched and holds(seen[-1].object))
    return None


def window_gap(view: EvidenceView, targets: Iterable[WatchTarget]) -> str | None:
    """Why the window cannot show the watched checks held, or None (also for a bundle without watches).

    Only targets the before-snapshot records are needed: an object the snapshots do not hold is never
    compared, so there is nothing of it to watch.
    """
    watched = view.bundle.watched
    wanted = [t for t in dict.fromkeys(targets) if view.before.find(t.kind, t.name, t.namespace) is not None]
    if watched is None or not wanted:
        return None
    source = watched.evidence_source
    if not source.usable:
        detail = f" ({source.detail})" if source.detail else ""
        return f"window watch source {source.type} is {source.status.value}{detail}"
    missing = [t for t in wanted if watched.timeline(t.kind, t.name, t.namespace) is None]
    if missing:
        names = ", ".join(f"{t.kind}/{t.name}" for t in missing)
        return f"window watch did not observe {names}, which the checks read over the whole run"
    return None
