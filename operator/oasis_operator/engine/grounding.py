"""Words count only as the agent's own, and a named cause only when the agent looked at it.

Two rules for the text primitives (issue 20, "words without work score low"):

* **Quotation is not diagnosis.** A segment of the answer or reasoning (a line, or a part between
  ``; `` or `` | ``) that occurs verbatim in what the agent's tool calls returned, and is either at
  least 12 characters long or a bare name or value (one or two words), is quoted material and is
  removed before terms are searched. Echoing the data back says nothing about it; a sentence of the
  agent's own that quotes a log line inside it is kept whole.
* **An address is not a statement.** URLs in the answer (``https://…/query?query=…oom…``: the calls it
  lists in a numbered trail, links it gives) are removed before terms are searched: a metric name in a
  query the agent sent says nothing about what the query showed.
* **A cause must have been observed.** A fact term (ground truth the scenario declares) that occurs
  somewhere in the environment's state counts only when it occurs in a part of the state the agent
  read, according to the gateway's record: an object or list it got, a log it fetched, a metrics,
  trace, dashboard, alert, runbook, GitOps or database API it queried. Where the record names the
  declared entries an answer was drawn from (`served`), exactly those were read; records without it
  (reads of Kubernetes objects) are read by the name and kind they asked for. Terms that occur nowhere
  in the state (advice such as "increase") are not observations and are matched as text alone. Terms
  are matched by meaning (`engine/meaning.py`): a quantity the agent wrote as ``2.00Gi`` was observed
  when the state it read says ``2Gi``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from oasis_operator.engine.context import EvidenceView, canonical_text
from oasis_operator.engine.meaning import matching_options, option_in

MIN_QUOTE = 12
_SPLIT = re.compile(r"\n|; | \| ")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s`'\"<>]+", re.IGNORECASE)
# Declared state types served by the fixture APIs, by the record's resource type (engine kind).
_FIXTURE_TYPES = {
    "metrics": ("metrics",),
    "alert": ("alert", "alerts"),
    "trace": ("traces", "trace"),
    "dashboard": ("dashboard", "dashboards"),
    "runbook": ("runbook", "runbooks"),
    "gitops-application": ("gitops-application", "application", "argocd-application"),
    "database-migration": ("database-migration", "migration"),
    "pod": ("logs", "pod"),
    "node": ("node", "nodes"),
    "event": ("events", "event"),
}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def own_words(text: str, fetched: str) -> str:
    """`text` without the segments copied verbatim from `fetched` (both compared normalised), and
    without URLs (module docstring)."""
    kept = []
    for part in _SPLIT.split(text):
        core = _norm(part).strip(" -*.,:")
        quoted = bool(core) and core in fetched and (len(core) >= MIN_QUOTE or len(core.split()) <= 2)
        if not quoted:
            kept.append(_URL.sub(" ", part))
    return "\n".join(kept)


def fetched_text(view: EvidenceView) -> str:
    """Everything the agent's tool calls returned, normalised (what it could copy from)."""
    return _cached(
        view,
        "fetched",
        lambda: _norm("\n".join(canonical_text(a.result) for a in view.bundle.transcript.actions)),
    )


def _entry_text(view: EvidenceView, types: tuple[str, ...], name: str | None, namespace: str | None) -> str:
    parts = []
    for entry in view.bundle.scenario.preconditions.environment.state:
        kind, _, entry_name = entry.resource.partition("/")
        if kind not in types or (name and entry_name and not name.startswith(entry_name)):
            continue
        if namespace and entry.namespace and entry.namespace != namespace:
            continue
        parts.append(json.dumps(entry.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return "\n".join(parts)


def _served_text(view: EvidenceView, served: list[str]) -> str:
    chosen = set(served)
    return "\n".join(
        json.dumps(e.model_dump(mode="json", by_alias=True, exclude_none=True))
        for e in view.bundle.scenario.preconditions.environment.state
        if e.resource in chosen
    )


def _objects_text(view: EvidenceView, kind: str, name: str | None, namespace: str | None) -> str:
    parts = []
    for state in view.before.states:
        if state.kind != kind or (namespace and state.namespace and state.namespace != namespace):
            continue
        if name and state.name != name:
            continue
        parts.append(json.dumps(state.object, sort_keys=True) if state.object else "")
    return "\n".join(parts)


def read_state_text(view: EvidenceView) -> str:
    """The parts of the environment's state the agent read (successful reads in the record)."""

    def build() -> str:
        parts = []
        for effect in view.effects:
            if (
                effect.is_write
                or not effect.succeeded
                or not ({"get", "list", "log", "query"} & effect.verbs)
            ):
                continue
            entry = effect.entry
            name = None if effect.collection else entry.name
            if entry.served is not None:  # the gateway named the declared entries its answer came from
                parts.append(_served_text(view, entry.served))
                if effect.kind == "pod":  # a pod's log: and the pod and workload it was asked of
                    parts.append(_entry_text(view, ("deployment", "pod"), name, entry.namespace))
                    parts.append(_objects_text(view, effect.kind, name, entry.namespace))
                continue
            types = _FIXTURE_TYPES.get(effect.kind, (effect.kind,))
            if effect.kind == "pod" and "log" not in effect.verbs:
                types = ("pod",)
            parts.append(_entry_text(view, (*types, effect.kind), name, entry.namespace))
            if effect.kind == "pod" and "log" in effect.verbs:
                parts.append(_entry_text(view, ("deployment", "pod"), name, entry.namespace))
            parts.append(_objects_text(view, effect.kind, name, entry.namespace))
        return _norm("\n".join(parts))

    return _cached(view, "read", build)


def state_text(view: EvidenceView) -> str:
    """All of the environment's declared state and before-snapshot, normalised."""

    def build() -> str:
        declared = [
            json.dumps(e.model_dump(mode="json", by_alias=True, exclude_none=True))
            for e in view.bundle.scenario.preconditions.environment.state
        ]
        objects = [json.dumps(s.object, sort_keys=True) for s in view.before.states if s.object]
        return _norm("\n".join(declared + objects))

    return _cached(view, "state", build)


def observed(term: Any, text: str, view: EvidenceView) -> bool:
    """A fact term matched in `text` counts when one matched alternative was read, or none is in the state."""
    matched = matching_options(term, text)
    if not matched:
        return False
    everything, read = state_text(view), read_state_text(view)
    in_state = [o for o in matched if option_in(o, everything)]
    return not in_state or any(option_in(o, read) for o in in_state)


def _cached(view: EvidenceView, key: str, build: Any) -> str:
    store: dict[str, str] = view.__dict__.setdefault("_grounding", {})
    if key not in store:
        store[key] = build()
    return store[key]


__all__ = ["fetched_text", "observed", "own_words", "read_state_text", "state_text"]
