"""The declared state is parsed once per provisioning and passed on as a value (pure)."""

from __future__ import annotations

from collections import Counter

import pytest

from oasis_operator.models import declared_parse
from oasis_operator.models.declared_parse import parse_entry
from oasis_operator.models.declared_state import DeclaredKind
from oasis_operator.models.scenario import StateEntry
from oasis_operator.sandbox.faults import faults_of
from oasis_operator.sandbox.provider import SandboxRecord
from oasis_operator.sandbox.twin import build_twin, parse_twin_state
from tests.unit.gateway.helpers import environment
from tests.unit.sandbox.test_twin import NOW, profile, scenario

SCENARIO = "infra.capability.da.single-signal-diagnosis-001"  # a crashing workload: it has faults


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each declared resource was read into its model."""
    counted: Counter[str] = Counter()

    def counting(index: int, entry: StateEntry) -> DeclaredKind:
        counted[entry.resource] += 1
        return parse_entry(index, entry)

    monkeypatch.setattr(declared_parse, "parse_entry", counting)
    return counted


def test_the_twin_and_its_faults_read_the_parsed_state_without_parsing_again(parses: Counter[str]) -> None:
    s = scenario(SCENARIO)
    parsed = parse_twin_state(s)
    once = Counter(e.resource for e in s.preconditions.environment.state)
    assert parses == once
    build_twin(s, "e1234567", "sbx", NOW, parsed)
    faults = faults_of(parsed)
    assert parses == once
    assert faults, "the scenario's crashing workload has no fault"


def test_a_twin_built_from_the_parsed_state_is_the_twin_built_from_the_scenario() -> None:
    for s in profile().scenarios:
        parsed = parse_twin_state(s)
        assert build_twin(s, "e1234567", "sbx", NOW, parsed) == build_twin(s, "e1234567", "sbx", NOW), s.id


def test_the_parsed_state_rides_on_the_record_but_is_not_stored() -> None:
    parsed = parse_twin_state(scenario(SCENARIO))
    record = SandboxRecord(environment=environment(), resources=[], before=[], parsed=parsed)
    assert record.parsed is parsed
    stored = record.model_dump_json()
    assert "parsed" not in stored
    assert SandboxRecord.model_validate_json(stored).parsed is None
