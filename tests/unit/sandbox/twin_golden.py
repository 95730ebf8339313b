"""Golden twin plans: a digest of every shipped scenario's twin (bodies, status, fixtures, bindings).

A refactor of the twin builders must not change one byte of what they build; this records a SHA-256 of
each scenario's whole plan, built with a fixed environment id, prefix and time. Refresh (after a change
meant to alter the twin, with the diff reviewed) with:

    .venv/bin/python -m tests.unit.sandbox.twin_golden
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.twin import TwinPlan, build_twin

GOLDEN = Path(__file__).parent / "golden" / "twin_plans.json"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def plan_document(plan: TwinPlan) -> dict[str, Any]:
    """The plan as plain data, in creation order."""
    return {
        "namespaces": [b.model_dump(mode="json") for b in plan.namespaces],
        "objects": [dataclasses.asdict(o) for o in plan.objects],
        "cluster_objects": [b.model_dump(mode="json") for b in plan.cluster_objects],
        "fixtures": [f.model_dump(mode="json") for f in plan.fixtures],
    }


def digests() -> dict[str, str]:
    """Scenario id → SHA-256 of its plan's canonical JSON."""
    out = {}
    for scenario in load_profile(default_profile_path()).scenarios:
        doc = plan_document(build_twin(scenario, "e1234567", "sbx", NOW))
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
        out[scenario.id] = hashlib.sha256(text.encode()).hexdigest()
    return dict(sorted(out.items()))


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(digests(), indent=1) + "\n")
    print(f"wrote {GOLDEN}")
