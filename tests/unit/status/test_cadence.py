"""The status write cadence (pure): which changes go out at once, and how long the others wait."""

from __future__ import annotations

from typing import Any

import pytest

from oasis_operator.status.cadence import DEFAULT_INTERVAL, Cadence, urgent

WRITTEN: dict[str, Any] = {
    "phase": "Safety",
    "observedGeneration": 1,
    "conditions": [{"type": "Progressing", "status": "True", "reason": "Safety"}],
    "progress": {"done": 1, "total": 2},
    "scenarios": [{"id": "a", "result": "PASS"}, {"id": "b"}],
}


def test_nothing_written_yet_is_urgent() -> None:
    assert urgent(None, WRITTEN) is True
    assert urgent(None, {}) is True


def test_a_change_of_the_rows_and_their_counts_alone_may_wait() -> None:
    started = {**WRITTEN, "scenarios": [WRITTEN["scenarios"][0], {"id": "b", "startedAt": "T"}]}
    assert urgent(WRITTEN, started) is False
    finished = {**started, "progress": {"done": 2, "total": 2}}
    assert urgent(WRITTEN, finished) is False
    assert urgent(WRITTEN, dict(WRITTEN)) is False


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("phase", "Capability"),
        ("phase", "Completed"),
        ("conditions", [{"type": "Ready", "status": "True", "reason": "VerdictReady"}]),
        ("observedGeneration", 2),
        ("completedAt", "2026-01-01T00:00:00Z"),
        ("summary", {"safety": "PASS"}),
        ("reportConfigMaps", ["x-verdict"]),
        ("agent", {"name": "careful"}),
        ("sandboxServer", "kube-apiserver v1.37.2"),
        ("preflightGaps", ["no audit log"]),
    ],
)
def test_any_other_change_goes_out_at_once_even_beside_a_row_change(key: str, value: Any) -> None:
    changed = {**WRITTEN, key: value}
    assert urgent(WRITTEN, changed) is True
    changed["scenarios"] = [{"id": "a", "result": "PASS"}, {"id": "b", "result": "FAIL"}]
    assert urgent(WRITTEN, changed) is True


def test_a_field_the_run_clears_is_urgent_too() -> None:
    cleared = {k: v for k, v in WRITTEN.items() if k != "phase"}
    assert urgent(WRITTEN, cleared) is True
    no_rows = {k: v for k, v in WRITTEN.items() if k not in ("scenarios", "progress")}
    assert urgent(WRITTEN, no_rows) is False  # rows dropped alone: deferrable like any row change


def test_the_delay_is_what_remains_of_the_interval_since_the_last_write() -> None:
    cadence = Cadence(interval=1.0)
    assert cadence.delay(None, 100.0, urgent=False) == 0.0  # nothing written yet
    assert cadence.delay(100.0, 100.25, urgent=False) == pytest.approx(0.75)
    assert cadence.delay(100.0, 100.999, urgent=False) == pytest.approx(0.001)
    assert cadence.delay(100.0, 101.0, urgent=False) == 0.0
    assert cadence.delay(100.0, 250.0, urgent=False) == 0.0  # quiet for long: the change goes at once
    assert cadence.delay(100.0, 100.25, urgent=True) == 0.0


def test_the_default_interval_is_a_second_and_zero_writes_everything_at_once() -> None:
    assert Cadence().interval == DEFAULT_INTERVAL == 1.0
    assert Cadence(interval=0).delay(100.0, 100.0, urgent=False) == 0.0


def test_a_negative_interval_is_refused_with_what_to_write() -> None:
    with pytest.raises(ValueError, match="0 or more seconds, not -1"):
        Cadence(interval=-1)
