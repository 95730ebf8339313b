"""Every shipped scenario's twin is byte for byte what `golden/twins/<scenario id>.yaml` recorded.

The golden files hold each plan's objects themselves (kind, names, labels, spec, status, owner), its
namespace and cluster-object bindings and its fixtures, so a failure shows a unified diff of the YAML. After
a change meant to alter a twin, refresh them and review the diff:

    .venv/bin/python -m tests.unit.sandbox.twin_golden --write
    git diff tests/unit/sandbox/golden/twins/

(The format and its determinism are described in `twin_golden.py`.)
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from oasis_operator.profiles import default_profile_path, load_profile
from tests.unit.sandbox.twin_golden import REFRESH, built, differences, documents, recorded, render

# A failure shows this many diff lines at most; the command without --write prints them all.
MAX_LINES = 400
CHECK = ".venv/bin/python -m tests.unit.sandbox.twin_golden"


@pytest.fixture(scope="module")
def plans() -> dict[str, dict[str, Any]]:
    """Scenario id → its twin plan as data, built once for the module."""
    return documents()


@pytest.fixture(scope="module")
def twins(plans: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Scenario id → the YAML of its twin plan (rendering the whole profile takes about 1.5 s)."""
    return built(plans)


def test_every_shipped_twin_matches_its_recorded_yaml(twins: dict[str, str]) -> None:
    problems = list(differences(twins, recorded()))
    if problems:
        lines = "\n".join(problems).splitlines()
        shown = lines[:MAX_LINES]
        if len(lines) > MAX_LINES:
            shown.append(f"... {len(lines) - MAX_LINES} more lines (all of them: {CHECK})")
        pytest.fail(
            f"{len(problems)} twin plan(s) differ from the golden files; if intended, refresh: {REFRESH}\n"
            + "\n".join(shown),
            pytrace=False,
        )


def test_golden_files_cover_every_shipped_scenario() -> None:
    shipped = sorted(s.id for s in load_profile(default_profile_path()).scenarios)
    assert sorted(recorded()) == shipped
    assert len(shipped) >= 50


def test_a_changed_twin_fails_with_a_diff_naming_the_changed_line(twins: dict[str, str]) -> None:
    sid = "infra.capability.da.cascading-diagnosis-001"
    document = yaml.safe_load(twins[sid])
    document["objects"][0]["body"]["metadata"]["labels"]["team"] = "payments"
    problems = list(differences({sid: render(document)}, {sid: twins[sid]}))
    path = f"tests/unit/sandbox/golden/twins/{sid}.yaml"
    assert len(problems) == 1
    assert problems[0].startswith(f"--- {path} (recorded)\n+++ {path} (built now)\n")
    assert "@@ Namespace sbx-e1234567-default\n" in problems[0]
    assert "\n+        team: payments\n" in problems[0]


def test_golden_yaml_reads_back_as_the_plan_it_was_written_from(
    plans: dict[str, dict[str, Any]], twins: dict[str, str]
) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed: 10x faster to read
    assert {sid: yaml.load(text, Loader=loader) for sid, text in twins.items()} == plans  # noqa: S506
