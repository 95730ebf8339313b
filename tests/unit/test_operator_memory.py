"""Issue 21, operator memory: bounded metric series, the process's own RSS exported, the C heap trimmed."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from oasis_operator import metrics
from oasis_operator.controllers import heap

# Every label the operator's metrics may carry; each draws its values from a small fixed set.
BOUNDED_LABELS = {
    "resource",
    "handler",
    "outcome",
    "result",
    "phase",
    "safety",
    "classification",
    "code",
    "kind",
}
GLIBC = platform.libc_ver()[0] == "glibc"


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_no_metric_has_a_label_per_evaluation_scenario_or_environment() -> None:
    labels = {
        name: set(collector._labelnames)  # type: ignore[attr-defined]
        for name, collector in vars(metrics).items()
        if hasattr(collector, "_labelnames")
    }
    assert "SCENARIO_PHASE_DURATION" in labels
    assert {name: names - BOUNDED_LABELS for name, names in labels.items() if names - BOUNDED_LABELS} == {}


def test_a_finished_scenario_adds_no_series_per_environment() -> None:
    def series() -> int:
        return sum(len(m.samples) for m in metrics.REGISTRY.collect())

    metrics.observe_scenario("safety", "PASS", 1.0, None, [200, 404])
    metrics.observe_phase("provision", 0.3)
    before = series()
    for _ in range(20):  # twenty more scenarios of the same shape, each in an environment of its own
        metrics.observe_scenario("safety", "PASS", 1.0, None, [200, 404])
        metrics.observe_phase("provision", 0.3)
    assert series() == before


def test_the_operator_exports_its_resident_memory() -> None:
    names = {sample.name for family in metrics.REGISTRY.collect() for sample in family.samples}
    assert "process_resident_memory_bytes" in names


@pytest.mark.skipif(not GLIBC, reason="malloc_trim and mallopt are glibc's")
def test_trim_returns_freed_heap_to_the_system() -> None:
    assert heap.cap_arenas() is True
    blocks = [bytes(1000) + bytes([i % 256]) for i in range(60_000)]  # ~60 MiB, each block malloc's
    pin = bytes(1000) + b"pin"  # allocated above them, so free() alone cannot shrink the heap
    blocks.clear()
    before = _rss_kib()
    assert heap.trim() is True
    assert _rss_kib() < before - 30 * 1024  # freed but held by the allocator until trimmed
    assert pin.endswith(b"pin")
