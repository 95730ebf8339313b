"""Pure parts of issue 16 and of "no PASS without an agent": selectors, bounds, agent contact, strict CRD."""

from __future__ import annotations

import json

import pytest

from oasis_operator.agents.protocol import AgentOutcome
from oasis_operator.engine.evaluate import excluded_result
from oasis_operator.evaluation.bounds import bounded_json
from oasis_operator.evaluation.contact import is_unreachable
from oasis_operator.evaluation.selection import SelectionError, label_selector_query
from oasis_operator.models.agent_failure import AgentFailure, AgentFailureSource
from oasis_operator.models.evidence import (
    AuditEntry,
    AuditLog,
    EvidenceSource,
    SourceStatus,
)
from oasis_operator.models.results import ScenarioOutcome
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.status.rows import finished_row, initial_row, is_done, judged, progress

PROFILE = load_profile(default_profile_path())
SAFETY = next(s for s in PROFILE.scenarios if s.classification.value == "safety")
HEALTHY = EvidenceSource(type="gateway_audit", status=SourceStatus.HEALTHY)


def test_in_without_values_names_the_entry() -> None:
    with pytest.raises(SelectionError, match=r"Expressions\[1\]\.values: operator In needs at least one"):
        label_selector_query({}, [("a", "Exists", []), ("team", "In", [])])
    with pytest.raises(SelectionError, match=r"Expressions\[0\]\.values: operator Exists takes no values"):
        label_selector_query({}, [("a", "Exists", ["x"])])
    assert label_selector_query({"k": "v"}, [("t", "In", ["a", "b"])]) == "k=v,t in (a,b)"


def test_evidence_within_the_bound_is_stored_as_is() -> None:
    doc = {"a": "x" * 100, "b": [1, 2, 3]}
    bounded = bounded_json(doc, limit=10_000)
    assert bounded.note is None
    assert json.loads(bounded.text) == doc


def test_evidence_over_the_bound_is_trimmed_with_markers_and_a_note() -> None:
    doc = {"transcript": {"final_answer": "y" * 50_000}, "entries": [{"body": "z" * 2000} for _ in range(40)]}
    bounded = bounded_json(doc, limit=20_000)
    assert len(bounded.text.encode()) <= 20_000
    assert bounded.note is not None
    assert "over the 20000-byte bound" in bounded.note
    trimmed = json.loads(bounded.text)
    assert "…[trimmed " in trimmed["transcript"]["final_answer"]
    assert trimmed["transcript"]["final_answer"].startswith("y" * 256)


def test_many_small_entries_are_cut_to_fit() -> None:
    doc = {"entries": [{"n": i, "path": "/api/v1/namespaces/x/pods"} for i in range(20_000)]}
    bounded = bounded_json(doc, limit=50_000)
    assert len(bounded.text.encode()) <= 50_000
    assert bounded.note is not None
    assert "lists and mappings to" in bounded.note


def test_a_mapping_of_many_keys_is_cut_to_fit() -> None:
    doc = {"answer": {f"key-{i}": i for i in range(50_000)}}
    bounded = bounded_json(doc, limit=50_000)
    assert len(bounded.text.encode()) <= 50_000
    kept = json.loads(bounded.text)["answer"]
    assert list(kept)[:2] == ["key-0", "key-1"]  # the first entries are kept
    assert bounded.note is not None


def test_nesting_too_deep_to_cut_keeps_the_head_with_a_truncation_marker() -> None:
    doc: dict[str, object] = {}
    node = doc
    for _ in range(400):  # every level fits the smallest cut, together they do not
        node["a"] = {"b" * 10: "c" * 200, "next": {}}
        node = node["a"]["next"]  # type: ignore[assignment,index]
    bounded = bounded_json(doc, limit=20_000)
    assert len(bounded.text.encode()) <= 20_000
    stored = json.loads(bounded.text)
    assert stored["truncated"]["bytes"] > 20_000
    assert stored["text"]
    assert json.dumps(doc).startswith(stored["text"])
    assert bounded.note is not None
    assert "stored as the first" in bounded.note
    assert "cannot be replayed" in bounded.note


def _entry() -> AuditEntry:
    return AuditEntry(seq=0, time="2026-01-01T00:00:00Z", verb="get", resource="pods", response_code=200)


def test_first_calls_that_never_reached_the_agent_are_unreachable() -> None:
    down = AgentOutcome(error_kind="transport", error="connection refused")
    assert is_unreachable(down, AuditLog(evidence_source=HEALTHY))
    assert is_unreachable(down, None)
    assert is_unreachable(AgentOutcome(error_kind="timeout", error="no answer"), None)


def test_an_agent_that_acted_or_answered_is_not_unreachable() -> None:
    acted = AuditLog(evidence_source=HEALTHY, entries=[_entry()])
    assert not is_unreachable(AgentOutcome(error_kind="timeout", error="no answer within 10s"), acted)
    assert not is_unreachable(AgentOutcome(error_kind="protocol", error="bad json"), None)
    assert not is_unreachable(AgentOutcome(error_kind="exit", error="exited with status 1"), None)
    assert not is_unreachable(AgentOutcome(), None)


def test_unevaluable_row_has_its_result_and_cause_but_is_not_judged() -> None:
    result = excluded_result(SAFETY, ["x"]).model_copy(
        update={
            "outcome": ScenarioOutcome.UNEVALUABLE,
            "summary": "unevaluable: agent failure (transport): refused",
            "agent_failure": AgentFailure(cause="refused", source=AgentFailureSource.TRANSPORT),
        }
    )
    row = finished_row(initial_row(SAFETY), result, "e-scenario-00", "transport: refused")
    assert row.result == "UNEVALUABLE"
    assert row.unevaluable == "refused"
    assert row.evidence == "e-scenario-00"
    assert row.agentError == "transport: refused"
    assert is_done(row)
    assert not judged([row])
    counts = progress([row, initial_row(SAFETY)])
    assert (counts.done, counts.unevaluable, counts.passed) == (1, 1, 0)
