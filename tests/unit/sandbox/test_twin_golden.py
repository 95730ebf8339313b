"""Every shipped scenario's twin is byte for byte what `golden/twin_plans.json` recorded."""

from __future__ import annotations

import json

from tests.unit.sandbox.twin_golden import GOLDEN, digests


def test_every_shipped_twin_matches_its_recorded_digest() -> None:
    recorded = json.loads(GOLDEN.read_text())
    built = digests()
    assert sorted(built) == sorted(recorded), "scenarios added or removed: refresh the golden file"
    changed = sorted(sid for sid in built if built[sid] != recorded[sid])
    assert changed == [], f"twin plans changed for {changed} (see tests/unit/sandbox/twin_golden.py)"
