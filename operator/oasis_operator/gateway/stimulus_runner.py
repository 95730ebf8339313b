"""Runs one environment's `StimulusPlan`: counts calls, fires temporal conditions, injects output."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from oasis_operator.gateway.recorder import RecordUnavailableError, utc_now
from oasis_operator.gateway.requestinfo import RequestInfo, parse_request
from oasis_operator.gateway.state import EnvState
from oasis_operator.gateway.stimuli import (
    KubeChange,
    StimulusCounters,
    StimulusPlan,
    TemporalCondition,
    Trigger,
)
from oasis_operator.gateway.upstream import Upstream
from oasis_operator.models.verbs import REQUEST_WRITE_VERBS

log = logging.getLogger(__name__)
PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


def _describe(trigger: Trigger) -> str:
    if trigger.kind == "after_tool_calls":
        return f"after_{trigger.count}_tool_calls"
    if trigger.kind == "at_seconds":
        return f"at_{trigger.seconds:g}s"
    if trigger.kind == "on_nth_query":
        return f"on_{_ordinal(trigger.count)}_query" + (f" ({trigger.api})" if trigger.api else "")
    if trigger.kind == "at_start":
        return "at_start"
    return f"on_first_write {trigger.resource}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class StimulusRunner:
    """The stimuli of one environment, attached to the gateway for the length of one run."""

    def __init__(self, state: EnvState, upstream: Upstream, plan: StimulusPlan) -> None:
        self.state = state
        self.upstream = upstream
        self.plan = plan
        self.counters = StimulusCounters()
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Future[None]] = set()

    def arm(self) -> None:
        """Apply `at_start` conditions and start the clock of `at_<N>s` ones (call before the prompt)."""
        loop = asyncio.get_running_loop()
        for condition in self.plan.conditions:
            if condition.trigger.kind == "at_start":
                self._start(self.fire, condition)
            elif condition.trigger.kind == "at_seconds":
                handle = loop.call_later(condition.trigger.seconds, self._start, self.fire, condition)
                self.counters.timers.append(handle)

    def disarm(self) -> None:
        for handle in self.counters.timers:
            handle.cancel()
        self.counters.timers.clear()

    def response_hook(self, api: str, route: str, text: str) -> str:
        """Apply every matching output injection to a response about to be sent."""
        for injection in self.plan.injections:
            changed = injection.apply(api, route, text)
            if changed != text:
                self._note(injection.id, "response", f"{api} {route}")
                text = changed
        return text

    async def before(self, api: str, info: RequestInfo) -> None:
        """Count a request; fire conditions that must be in effect for it."""
        discovery = api == "kubernetes" and not info.is_resource
        before = self.counters.tool_calls
        # Pod logs are queries too (of the logging API), though they travel through the Kubernetes API.
        query_api = "logs" if api == "kubernetes" and info.subresource == "log" else api
        self.counters.count_request(query_api, discovery, self.plan.tool_call_gap)
        for condition in self.plan.conditions:
            trigger = condition.trigger
            new_call = self.counters.tool_calls > before
            if trigger.kind == "at_start":
                await self.fire(condition)  # a no-op once applied; waits if arm() is still applying it
            elif trigger.kind == "after_tool_calls" and new_call and before >= trigger.count:
                await self.fire(condition)
            elif trigger.kind == "on_nth_query" and api != "kubernetes" and trigger.api in {None, api}:
                seen = (
                    sum(self.counters.queries.values()) if trigger.api is None else self.counters.queries[api]
                )
                if seen >= trigger.count:
                    await self.fire(condition)

    async def after(self, api: str, info: RequestInfo, code: int) -> None:
        """Fire write-triggered conditions, and tool-call conditions once the call has ended."""
        for condition in self.plan.conditions:
            trigger = condition.trigger
            if trigger.kind == "on_first_write" and _writes(info, code, trigger):
                await self.fire(condition)
            elif (
                trigger.kind == "after_tool_calls"
                and condition.id not in self.counters.fired
                and self.counters.tool_calls >= trigger.count
            ):
                calls = self.counters.tool_calls
                loop = asyncio.get_running_loop()
                loop.call_later(self.plan.tool_call_gap, self._start, self._if_idle, condition, calls)

    def _start(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        task = asyncio.ensure_future(fn(*args))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _if_idle(self, condition: TemporalCondition, calls: int) -> None:
        if self.counters.tool_calls == calls:
            await self.fire(condition)

    async def fire(self, condition: TemporalCondition) -> None:
        """Apply a condition's change once, and record when."""
        async with self._lock:
            if condition.id in self.counters.fired or self.state.revoked:
                return
            self.counters.fired.add(condition.id)
            change = condition.change.at(utc_now())
            results = [await self._kube_change(c) for c in change.kubernetes]
            fixtures = list(self.state.fixtures)
            for entry in change.fixtures:
                fixtures = [f for f in fixtures if (f.kind, f.name) != (entry.kind, entry.name)] + [entry]
            self.state.fixtures = fixtures
            detail = condition.description or condition.id
            if results:
                detail += " (API answers: " + ", ".join(str(r) for r in results) + ")"
            self._note(condition.id, _describe(condition.trigger), detail)

    async def _kube_change(self, change: KubeChange) -> int:
        method = "POST" if change.create is not None else "PATCH"
        info = self.state.names.request_info(parse_request(method, change.path))
        body = self.state.names.request_body(change.create if change.create is not None else change.patch)
        content_type = (
            "application/json" if change.create is not None else PATCH_CONTENT_TYPES[change.patch_type]
        )
        headers = [("Content-Type", content_type), ("Accept", "application/json")]
        async with self.upstream.request(method, info.path(), headers, json.dumps(body).encode()) as resp:
            await resp.read()
            if resp.status >= 300:
                log.warning("stimulus change failed path=%s code=%s", change.path, resp.status)
            return int(resp.status)

    def _note(self, stimulus: str, trigger: str, detail: str) -> None:
        try:
            self.state.recorder.stimulus(stimulus, trigger, detail)
        except RecordUnavailableError:
            log.exception("cannot record stimulus env=%s", self.state.env.id)


def _writes(info: RequestInfo, code: int, trigger: Trigger) -> bool:
    if info.verb not in REQUEST_WRITE_VERBS or code >= 300 or not trigger.resource:
        return False
    kind, _, name = trigger.resource.partition("/")
    if not info.resource.startswith(kind.lower()) or (name and info.name != name):
        return False
    return trigger.namespace is None or trigger.namespace == info.namespace
