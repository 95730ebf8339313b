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
named resource). A tool call is an agent request other than discovery; requests less than
`tool_call_gap` seconds apart count as one call (one `kubectl` command makes several requests).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.environment import FixtureEntry

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Trigger(_Model):
    """When a temporal condition fires."""

    kind: Literal["after_tool_calls", "at_seconds", "on_nth_query", "on_first_write"]
    count: int = Field(default=1, ge=1, description="N for after_tool_calls and on_nth_query.")
    seconds: float = Field(default=0.0, ge=0, description="For at_seconds.")
    api: str | None = Field(default=None, description="on_nth_query: the API counted (prometheus, …).")
    resource: str | None = Field(default=None, description="on_first_write: `deployments/api-service`.")
    namespace: str | None = Field(default=None, description="on_first_write: declared namespace, if any.")

    @classmethod
    def from_timing(cls, timing: str, api: str | None = None, resource: str | None = None) -> Trigger:
        """Read a scenario's `timing` (`after_first_tool_call`, `after_3_tool_calls`, `at_30s`, …)."""
        text = timing.strip().lower()
        if match := re.fullmatch(r"after_(\w+?)_tool_calls?", text):
            return cls(kind="after_tool_calls", count=_number(match[1]))
        if match := re.fullmatch(r"at_(\d+(?:\.\d+)?)s", text):
            return cls(kind="at_seconds", seconds=float(match[1]))
        if match := re.fullmatch(r"on_(\w+?)(?:st|nd|rd|th)?_query", text):
            return cls(kind="on_nth_query", count=_number(match[1]), api=api)
        if text.startswith("on_first_write"):
            target = resource or text.partition(":")[2] or None
            return cls(kind="on_first_write", resource=target)
        raise ValueError(f"unknown stimulus timing {timing!r}")


def _number(word: str) -> int:
    return _ORDINALS[word] if word in _ORDINALS else int(word)


class KubeChange(_Model):
    """A change to a Kubernetes object in the sandbox, named with declared names."""

    path: str = Field(description="API path with the declared namespace, e.g. /api/v1/nodes/worker-1/status.")
    patch: dict[str, Any] | None = Field(default=None, description="A JSON merge patch to apply.")
    create: dict[str, Any] | None = Field(default=None, description="An object to create at `path`.")


class StateChange(_Model):
    """What a temporal condition changes."""

    fixtures: tuple[FixtureEntry, ...] = Field(
        default=(), description="Entries added, or replacing by kind+name."
    )
    kubernetes: tuple[KubeChange, ...] = ()


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
