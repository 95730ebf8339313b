"""Watch the objects a scenario's whole-run checks read, from the agent's credentials to the after-snapshot.

One Kubernetes watch per object (`WatchTarget`, resolved against the environment's declared resources),
through the kubernetes client's `watch.Watch` helper: each starts with a list of the object's collection
narrowed to its name (`fieldSelector=metadata.name=…`), and watches from that list's resourceVersion, so
no change between the list and the watch is missed. A watch the server ends (its timeout) is resumed from
the last resourceVersion seen (bookmarks keep it fresh); one that expired (410 Gone) is re-established
with a new list. If that list shows the object at another version than the last one seen, changes in
between may be lost: the observation is then `partial`. A watch that fails otherwise makes it
`unreachable`; so does a failed list. Either way the engine cannot read the window as complete.

Every state is normalised as the snapshots are (`sandbox.snapshot.normalise`, declared names, no volatile
metadata, bookkeeping labels stripped) and kept only when it differs from the last kept state of the same
object in what a check can read: the object without ``status`` (with it for a target that reads status),
or its existence. A timeline is bounded (`MAX_STATES`); past it, the observation is `partial`.

At the end (`stop`), each object is listed once more and the watch is given a moment to deliver that
version, so a change made just before the after-snapshot is in the timeline too.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import watch
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.models.environment import Environment
from oasis_operator.models.kinds import KIND_TYPES
from oasis_operator.models.sources import EvidenceSource, SourceStatus
from oasis_operator.models.window import (
    ObjectTimeline,
    ObservedState,
    WatchEvent,
    WatchTarget,
    WindowObservation,
)
from oasis_operator.sandbox.observe import ResourceRef, strip_bookkeeping
from oasis_operator.sandbox.snapshot import normalise

log = logging.getLogger(__name__)

SOURCE_TYPE = "kube_watch"
MAX_STATES = 64  # distinct states kept per object; an agent's legitimate turn needs a handful
SERVER_TIMEOUT = 60  # seconds the server keeps one watch request open before it is resumed
CATCH_UP = 2.0  # seconds `stop` waits for a watch to deliver the version its final list read
Body = dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def resolve_targets(
    targets: list[WatchTarget], resources: list[ResourceRef]
) -> list[tuple[WatchTarget, ResourceRef]]:
    """Each target with the declared resource it names; a target the snapshots do not hold is left out
    (the engine never compares it, so there is nothing to watch)."""
    found = []
    for target in targets:
        for ref in resources:
            same_kind = KIND_TYPES.get(ref.kind, ref.kind.lower()) == target.kind
            same_place = target.namespace is None or target.namespace == ref.namespace
            if same_kind and ref.name == target.name and same_place:
                found.append((target, ref))
                break
    return found


@dataclass
class _Object:
    """The watch of one object and what it saw."""

    target: WatchTarget
    ref: ResourceRef
    namespace: str | None  # sandbox namespace
    name: str  # sandbox name
    states: list[ObservedState] = field(default_factory=list)
    last_key: Any = None  # what a check can read of the last kept state (None: absent)
    seen_version: str | None = None  # the object's resourceVersion in the last event (None: absent)
    problems: list[str] = field(default_factory=list)
    failed: bool = False
    thread: threading.Thread | None = None
    current: watch.Watch | None = None


class WindowWatcher:
    """The window watch of one environment: `start` when the agent gets credentials, `stop` after the
    after-snapshot (always, also when the run fails; `stop` is idempotent)."""

    def __init__(
        self,
        api: ApiClient,
        env: Environment,
        resources: list[ResourceRef],
        targets: list[WatchTarget],
        *,
        max_states: int = MAX_STATES,
        server_timeout: int = SERVER_TIMEOUT,
    ) -> None:
        self.api = api
        self.env = env
        self.max_states = max_states
        self.server_timeout = server_timeout
        self.renames = env.renames()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._objects = [self._object(t, r) for t, r in resolve_targets(targets, resources)]
        self._start = ""
        self._observation: WindowObservation | None = None

    def _object(self, target: WatchTarget, ref: ResourceRef) -> _Object:
        if ref.kind == "Namespace":
            return _Object(target, ref, None, self.env.sandbox_namespace(ref.name) or ref.name)
        if ref.namespace is None:
            return _Object(target, ref, None, self.env.sandbox_object_name(ref.kind, ref.name) or ref.name)
        return _Object(target, ref, self.env.sandbox_namespace(ref.namespace), ref.name)

    # --- the calls ---------------------------------------------------------------------------------------
    def _path(self, obj: _Object) -> str:
        return resource_path(obj.ref.kind, obj.namespace, api_version=obj.ref.api_version)

    def _list(self, obj: _Object) -> tuple[str, Body | None]:
        """(collection resourceVersion, the object or None) from a list narrowed to its name."""
        listed = request(
            self.api, "GET", self._path(obj), query={"fieldSelector": f"metadata.name={obj.name}"}
        )
        items = listed.get("items") or []
        return str(listed["metadata"]["resourceVersion"]), (items[0] if items else None)

    def _watch_call(self, obj: _Object) -> Any:
        """The list function `watch.Watch.stream` calls: one watch request, its raw streaming response."""

        def call(**kwargs: Any) -> urllib3.BaseHTTPResponse:
            query = [
                ("watch", "true"),
                ("fieldSelector", f"metadata.name={obj.name}"),
                ("allowWatchBookmarks", "true"),
                ("resourceVersion", kwargs["resource_version"]),
                ("timeoutSeconds", str(kwargs["timeout_seconds"])),
            ]
            method, url, headers, body, post = self.api.param_serialize(
                method="GET",
                resource_path=self._path(obj),
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            answer = self.api.call_api(
                method, url, header_params=headers, body=body, post_params=post,
                _request_timeout=(10, self.server_timeout + 30),
            )  # fmt: skip
            if not 200 <= answer.status <= 299:
                data = answer.read()  # type: ignore[no-untyped-call]
                raise ApiException(
                    status=answer.status, reason=answer.reason, body=data.decode("utf-8", "replace")
                )
            raw: urllib3.BaseHTTPResponse = answer.response
            return raw

        return call

    # --- recording ---------------------------------------------------------------------------------------
    def _record(self, obj: _Object, event: WatchEvent, body: Body | None) -> None:
        """Note the object's version and keep the state if it is new (a DELETED event's body is the object
        as it was last: its version is kept, its state is absent)."""
        version = str(body["metadata"].get("resourceVersion")) if body is not None else None
        shown = None
        if body is not None and event is not WatchEvent.DELETED:
            shown = normalise(strip_bookkeeping(body), self.renames, keep_status=True)
        key = (
            shown if shown is None or obj.target.status else {k: v for k, v in shown.items() if k != "status"}
        )
        with self._lock:
            obj.seen_version = version if event is not WatchEvent.DELETED else None
            if obj.states and key == obj.last_key:
                return
            if len(obj.states) >= self.max_states:
                if not any("bound" in p for p in obj.problems):
                    obj.problems.append(
                        f"{self._label(obj)} went through more than {self.max_states} states (the bound)"
                    )
                return
            obj.last_key = key
            obj.states.append(ObservedState(time=_now(), event=event, resource_version=version, object=shown))

    def _label(self, obj: _Object) -> str:
        return f"{obj.target.kind}/{obj.target.name}"

    # --- life --------------------------------------------------------------------------------------------
    def start(self) -> None:
        """List every object (its state at the window's start) and start its watch from that list."""
        self._start = _now()
        for obj in self._objects:
            try:
                version, body = self._list(obj)
            except Exception as exc:  # noqa: BLE001 - any failure makes the source unusable, never a pass
                obj.failed = True
                obj.problems.append(f"listing {self._label(obj)} failed: {exc}")
                continue
            self._record(obj, WatchEvent.LISTED, body)
            obj.thread = threading.Thread(
                target=self._follow, args=(obj, version), name=f"window-{obj.name}", daemon=True
            )
            obj.thread.start()

    def _follow(self, obj: _Object, version: str) -> None:
        """Watch one object until stopped: resume after a server timeout, relist after an expiry."""
        while not self._stopping.is_set():
            helper = watch.Watch()  # type: ignore[no-untyped-call]
            obj.current = helper
            try:
                for event in helper.stream(  # type: ignore[no-untyped-call]
                    self._watch_call(obj), resource_version=version, timeout_seconds=self.server_timeout
                ):
                    raw = event.get("raw_object") or {}
                    kind = event.get("type")
                    version = str((raw.get("metadata") or {}).get("resourceVersion") or version)
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self._record(obj, WatchEvent(kind), raw)
                    if self._stopping.is_set():
                        return
            except ApiException as exc:
                if self._stopping.is_set():
                    return
                if exc.status == 410:
                    time.sleep(0.1)  # a server that keeps answering 410 is not asked in a tight loop
                    version = self._relist(obj)
                    if version:
                        continue
                    return
                self._fail(obj, f"watching {self._label(obj)} failed: {exc.status} {exc.reason}")
                return
            except Exception as exc:  # noqa: BLE001 - a broken stream makes the source unusable
                if self._stopping.is_set():
                    return
                self._fail(obj, f"watching {self._label(obj)} failed: {exc}")
                return

    def _relist(self, obj: _Object) -> str:
        """After an expiry: list again, note a possible gap, return the version to watch from ('' failed)."""
        try:
            version, body = self._list(obj)
        except Exception as exc:  # noqa: BLE001
            self._fail(obj, f"relisting {self._label(obj)} after its watch expired failed: {exc}")
            return ""
        now = str(body["metadata"]["resourceVersion"]) if body is not None else None
        with self._lock:
            gap = now != obj.seen_version
            if gap:
                obj.problems.append(
                    f"the watch of {self._label(obj)} expired between resourceVersion {obj.seen_version} and "
                    f"{now}: states in between may be missing"
                )
        self._record(obj, WatchEvent.LISTED, body)
        return version

    def _fail(self, obj: _Object, problem: str) -> None:
        log.warning("window watch env=%s: %s", self.env.id, problem)
        with self._lock:
            obj.failed = True
            obj.problems.append(problem)

    def stop(self) -> WindowObservation:
        """Catch every watch up with a final list, stop them and return what the window saw."""
        if self._observation is not None:
            return self._observation
        for obj in self._objects:
            if obj.thread is not None:
                self._catch_up(obj)
        self._halt()
        self._observation = self._observe()
        return self._observation

    def close(self) -> None:
        """Stop the watches without catching up, if the run ended before `stop` (a failed agent call, a
        sandbox that could not be observed); a no-op after `stop`."""
        if self._observation is None:
            self._halt()
            self._observation = self._observe()

    def _catch_up(self, obj: _Object) -> None:
        """List the object once more and wait (briefly) until its watch has delivered that version."""
        try:
            _, body = self._list(obj)
        except Exception as exc:  # noqa: BLE001
            self._fail(obj, f"the final list of {self._label(obj)} failed: {exc}")
            return
        final = str(body["metadata"]["resourceVersion"]) if body is not None else None
        deadline = time.monotonic() + CATCH_UP
        while (
            obj.seen_version != final and time.monotonic() < deadline and obj.thread and obj.thread.is_alive()
        ):
            time.sleep(0.02)
        if obj.seen_version != final and not obj.failed:
            with self._lock:
                obj.problems.append(
                    f"the watch of {self._label(obj)} had not delivered version {final} by the end"
                )
            self._record(obj, WatchEvent.LISTED, body)

    def _halt(self) -> None:
        """Stop every watch; a watch request being opened just now is stopped again until it ends."""
        self._stopping.set()
        deadline = time.monotonic() + 5.0
        running = [obj for obj in self._objects if obj.thread is not None]
        while running and time.monotonic() < deadline:
            for obj in running:
                if obj.current is not None:
                    obj.current.stop()  # type: ignore[no-untyped-call]
            for obj in running:
                assert obj.thread is not None  # noqa: S101 - filtered above
                obj.thread.join(0.05 if obj is running[0] else 0.001)
            running = [obj for obj in running if obj.thread is not None and obj.thread.is_alive()]

    def _observe(self) -> WindowObservation:
        problems = [p for obj in self._objects for p in obj.problems]
        status = SourceStatus.AVAILABLE
        if any(obj.failed for obj in self._objects):
            status = SourceStatus.UNREACHABLE
        elif problems:
            status = SourceStatus.PARTIAL
        return WindowObservation(
            evidence_source=EvidenceSource(
                type=SOURCE_TYPE, status=status, detail="; ".join(problems) or None
            ),
            start=self._start or _now(),
            end=_now(),
            objects=[
                ObjectTimeline(
                    kind=obj.target.kind,
                    name=obj.target.name,
                    namespace=obj.ref.namespace,
                    states=list(obj.states),
                )
                for obj in self._objects
                if not obj.failed or obj.states
            ],
        )
