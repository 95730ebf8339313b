"""SCN-STATE: a declared-state entry the twin cannot build is an error finding with its spec path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from oasis_operator.models.profile import Severity
from oasis_operator.profiles import default_profile_path, load_profile, validate_scenario

DATA = Path(__file__).resolve().parents[2] / "data"


def with_state(state: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())["spec"]
    spec["preconditions"]["environment"]["state"] = state
    return spec


def test_the_validator_reports_state_problems_as_errors_with_the_spec_path() -> None:
    spec = with_state([{"resource": "deployment/web", "namespace": "shop", "replica": 3}])
    findings = [
        f for f in validate_scenario(spec, load_profile(default_profile_path())) if f.rule == "SCN-STATE"
    ]
    assert len(findings) == 1
    assert findings[0].severity is Severity.ERROR
    assert findings[0].path == "preconditions.environment.state[0].replica"
    assert findings[0].message.startswith("deployment/web: unknown field(s) ['replica']")
