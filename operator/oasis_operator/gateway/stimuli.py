"""Stimuli the gateway delivers during a run, described as data.

- `OutputInjection` (a `tool_output_injection` stimulus): rewrites the responses of one API whose route
  matches, by literal replacement or by setting/appending a JSON field. Deterministic: the same
  response is always rewritten the same way.
- `TemporalCondition` (a `temporal_condition` stimulus): when its `Trigger` fires, applies a
  `StateChange` (fixture entries added/replaced, Kubernetes objects patched or created with the
  gateway's identity) and notes the time in the environment's record.

Triggers: `after_tool_calls` (N calls answered; `after_first_tool_call`, `after_<N>_tool_calls`),
`at_seconds` (N seconds after the stimuli are armed; `at_<N>s`), `on_nth_query` (the Nth query to one
API sees the change; `on_<N>th_query`), `on_first_write` (right after the first successful write to a
named resource), `at_start` (applied when armed, and in any case before the first request is answered).
`Trigger`, `StateChange` and `KubeChange` are defined in `models.stimuli` (scenarios carry them as facts)
and re-exported here. A tool call is an agent request other than discovery; requests less than
`tool_call_gap` seconds apart count as one call (one `kubectl` command makes several requests).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.stimuli import KubeChange, StateChange, Trigger

__all__ = [
    "KubeChange",
    "OutputInjection",
    "StateChange",
    "StimulusCounters",
    "StimulusPlan",
    "TemporalCondition",
    "Trigger",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TemporalCondition(_Model):
    """A declared state change applied when its trigger fires (at most once)."""

    id: str
    trigger: Trigger
    change: StateChange
    description: str = ""


class OutputInjection(_Model):
    """A deterministic rewrite of the responses one API gives on matching routes."""

    id: str
    api: str = Field(
        description="kubernetes, logs, prometheus, traces, dashboards, runbooks, gitops, database"
    )
    route: str = Field(default=".*", description="Regular expression matched against the route.")
    mode: Literal["replace", "set", "append"] = "replace"
    find: str | None = Field(default=None, description="replace: the literal text to replace.")
    pointer: str | None = Field(default=None, description="set/append: JSON pointer, `*` for every item.")
    text: str

    @classmethod
    def for_target(cls, stimulus_id: str, target: str, find: str, text: str) -> OutputInjection:
        """A literal replacement aimed at a scenario's `target` (`observability-dashboards/<id>`, …)."""
        kind, _, rest = target.partition("/")
        name = re.escape(rest.split("/")[0]) if rest else "[^/]+"
        routes = {
            "observability-dashboards": ("dashboards", rf"/api/(search|dashboards/uid/{name})"),
            "observability-metrics": ("prometheus", r"/api/v[12]/(alerts|rules)"),
            "observability-logging": ("logs", rf"[^/]+/{name}/.*"),
            "observability-tracing": ("traces", rf"/api/traces(/{name})?"),
            "gitops": ("gitops", rf"/api/v1/applications(/{name})?"),
            "database": ("database", rf"/migrations(/{name})?"),
            "container-orchestration": ("kubernetes", rf"/.*/{name}(/.*)?"),
        }
        if kind not in routes:
            raise ValueError(f"no gateway API serves the target {target!r}")
        api, route = routes[kind]
        return cls(id=stimulus_id, api=api, route=route, find=find, text=text)

    def apply(self, api: str, route: str, body: str) -> str:
        """The response with this injection applied (unchanged if it does not target it)."""
        if api != self.api or not re.fullmatch(self.route, route):
            return body
        if self.mode == "replace":
            return body.replace(self.find, self.text) if self.find else body
        try:
            doc = json.loads(body)
        except ValueError:
            return body
        parts = [p.replace("~1", "/").replace("~0", "~") for p in (self.pointer or "").strip("/").split("/")]
        _set(doc, parts, self.text, append=self.mode == "append")
        return json.dumps(doc)


def _set(node: Any, parts: list[str], text: str, append: bool) -> None:
    head, rest = parts[0], parts[1:]
    children: list[tuple[Any, Any]] = []
    if isinstance(node, list):
        indexes = range(len(node)) if head == "*" else [int(head)] if head.isdigit() else []
        children = [(i, node) for i in indexes if i < len(node)]
    elif isinstance(node, dict) and (head in node or not rest):
        children = [(head, node)]
    for key, parent in children:
        if rest:
            _set(parent[key], rest, text, append)
            continue
        current = parent[key] if isinstance(parent, list) or key in parent else None
        parent[key] = f"{current}{text}" if append and isinstance(current, str) else text


class StimulusPlan(_Model):
    """Every stimulus of one environment."""

    injections: tuple[OutputInjection, ...] = ()
    conditions: tuple[TemporalCondition, ...] = ()
    tool_call_gap: float = Field(default=0.5, ge=0)


class StimulusCounters:
    """Tool calls and queries seen so far, and which conditions already fired."""

    def __init__(self) -> None:
        self.tool_calls = 0
        self.queries: dict[str, int] = {}
        self.fired: set[str] = set()
        self.last_request = 0.0
        self.armed_at = time.monotonic()
        self.timers: list[asyncio.TimerHandle] = []

    def count_request(self, api: str, discovery: bool, gap: float) -> None:
        now = time.monotonic()
        if not discovery and (self.tool_calls == 0 or now - self.last_request > gap):
            self.tool_calls += 1
        if not discovery:
            self.last_request = now
        if api != "kubernetes":
            self.queries[api] = self.queries.get(api, 0) + 1
