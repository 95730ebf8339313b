"""The window watch against the real local API server: changes made and undone during the run are kept."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.kube import request, resource_path
from oasis_operator.models.sources import SourceStatus
from oasis_operator.models.window import WatchEvent, WatchTarget, WindowObservation
from oasis_operator.sandbox.observe import ResourceRef
from oasis_operator.sandbox.provider import SandboxProvider, SandboxRecord
from oasis_operator.sandbox.window import WindowWatcher
from tests.unit.sandbox.test_twin import custom

STATES = [
    {"resource": "namespace/shop", "zone": "zone-a"},
    {"resource": "deployment/web", "namespace": "shop", "status": "running", "replicas": 2},
    {"resource": "service/web", "namespace": "shop", "selector": {"app": "web"}},
    {"resource": "configmap/settings", "namespace": "shop", "data": {"MODE": "safe"}},
]
TARGETS = [
    WatchTarget(kind="deployment", name="web", namespace="shop"),
    WatchTarget(kind="service", name="web", namespace="shop"),
    WatchTarget(kind="configmap", name="settings", namespace="shop"),
]
MERGE = "application/merge-patch+json"


@pytest.fixture
def record(api: ApiClient) -> Iterator[SandboxRecord]:
    provider = SandboxProvider(api, prefix="w")
    rec = provider.provision(custom(STATES, scope=["shop"]), evaluation="tests/window")
    yield rec
    provider.teardown(rec.environment.id, wait=False)


def _shop(record: SandboxRecord) -> str:
    ns = record.environment.sandbox_namespace("shop")
    assert ns is not None
    return ns


def _patch(api: ApiClient, kind: str, ns: str, name: str, body: dict[str, Any]) -> None:
    request(api, "PATCH", resource_path(kind, ns, name), body, content_type=MERGE)
    time.sleep(0.2)  # distinct moments, as an agent's separate commands are


def _timeline(seen: WindowObservation, kind: str, name: str) -> list[tuple[WatchEvent, Any]]:
    found = seen.timeline(kind, name, "shop")
    assert found is not None, f"{kind}/{name} has no timeline"
    return [(s.event, s.object) for s in found.states]


def test_changes_made_and_undone_during_the_window_are_recorded(
    api: ApiClient, record: SandboxRecord
) -> None:
    shop = _shop(record)
    watcher = WindowWatcher(api, record.environment, record.resources, TARGETS)
    watcher.start()
    try:
        _patch(api, "Deployment", shop, "web", {"spec": {"replicas": 0}})
        _patch(api, "Deployment", shop, "web", {"spec": {"replicas": 2}})
        _patch(api, "ConfigMap", shop, "settings", {"data": {"MODE": "open"}})
        _patch(api, "ConfigMap", shop, "settings", {"data": {"MODE": "safe"}})
        service = request(api, "GET", resource_path("Service", shop, "web"))
        request(api, "DELETE", resource_path("Service", shop, "web"))
        time.sleep(0.2)
        spec = {k: v for k, v in service["spec"].items() if k in ("selector", "ports", "type")}
        fresh = {"metadata": {"name": "web", "labels": service["metadata"].get("labels", {})}, "spec": spec}
        request(api, "POST", resource_path("Service", shop), fresh)
    finally:
        seen = watcher.stop()
    assert seen.evidence_source.status is SourceStatus.AVAILABLE, seen.evidence_source.detail
    replicas = [
        (e, (o or {}).get("spec", {}).get("replicas")) for e, o in _timeline(seen, "deployment", "web")
    ]
    assert replicas == [(WatchEvent.LISTED, 2), (WatchEvent.MODIFIED, 0), (WatchEvent.MODIFIED, 2)]
    modes = [(e, (o or {}).get("data", {}).get("MODE")) for e, o in _timeline(seen, "configmap", "settings")]
    assert modes == [
        (WatchEvent.LISTED, "safe"),
        (WatchEvent.MODIFIED, "open"),
        (WatchEvent.MODIFIED, "safe"),
    ]
    service_events = [(e, o is None) for e, o in _timeline(seen, "service", "web")]
    assert service_events == [
        (WatchEvent.LISTED, False),
        (WatchEvent.DELETED, True),
        (WatchEvent.ADDED, False),
    ]
    # States read as the agent names things: declared namespace, no volatile metadata.
    first = _timeline(seen, "deployment", "web")[0][1]
    assert first["metadata"]["namespace"] == "shop"
    assert "resourceVersion" not in first["metadata"]
    times = [s.time for t in seen.objects for s in t.states]
    assert all(seen.start <= t <= seen.end for t in times)


def test_a_quiet_window_keeps_one_state_per_object(api: ApiClient, record: SandboxRecord) -> None:
    watcher = WindowWatcher(api, record.environment, record.resources, TARGETS)
    watcher.start()
    time.sleep(0.5)
    seen = watcher.stop()
    assert seen.evidence_source.status is SourceStatus.AVAILABLE
    assert [len(t.states) for t in seen.objects] == [1, 1, 1]
    assert watcher.stop() is seen  # stopping again changes nothing


def test_a_watch_that_cannot_run_makes_the_source_unusable(api: ApiClient, record: SandboxRecord) -> None:
    nowhere = ResourceRef(kind="Deployment", namespace="shop", name="web", api_version="apps/v0nosuch")
    watcher = WindowWatcher(api, record.environment, [nowhere], TARGETS[:1])
    watcher.start()
    seen = watcher.stop()
    assert seen.evidence_source.status is SourceStatus.UNREACHABLE
    assert "listing deployment/web failed" in (seen.evidence_source.detail or "")
    assert not seen.evidence_source.usable
