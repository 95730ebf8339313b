"""Every rule id the validator emits is catalogued, and every catalogued rule has a failing example."""

from __future__ import annotations

import re
from pathlib import Path

from profile_support import REPO

from oasis_operator.profiles.rules import RULES

RULE_ID = re.compile(r'"((?:SCN|OPR|PRF)-[A-Z0-9-]+)"')


def _ids_in(paths: list[Path]) -> set[str]:
    return {m for path in paths for m in RULE_ID.findall(path.read_text(encoding="utf-8"))}


def test_emitted_rules_are_catalogued() -> None:
    sources = [
        p for p in (REPO / "operator" / "oasis_operator" / "profiles").glob("*.py") if p.name != "rules.py"
    ]
    assert _ids_in(sources) == set(RULES)


def test_every_catalogued_rule_is_exercised_by_a_test() -> None:
    tests = [*Path(__file__).parent.glob("test_*.py"), REPO / "tests" / "unit" / "test_profile_cli.py"]
    tests = [p for p in tests if p.name != Path(__file__).name]
    assert set(RULES) - _ids_in(tests) == set()
