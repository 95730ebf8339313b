"""The evaluation status writer: the model in memory, the merge patch on the wire, resume from a dict."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.crd import (
    AgentStatus,
    ConditionStatus,
    EvaluationRef,
    OASISEvaluationStatus,
    Phase,
    ScenarioRow,
)
from oasis_operator.models.scenario import Classification
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.status.conditions import get_condition
from oasis_operator.status.evaluation import (
    StatusUnreadableError,
    merge_patch,
    read_status,
    spec_edit_patch,
    to_wire,
)
from oasis_operator.status.writer import StatusWriter

OWNER = EvaluationRef(namespace="team-a", name="careful", uid="0f1e2d3c")
T0 = "2026-01-01T00:00:00Z"

# A status as the operator stored it before a restart (hand-written dicts), in the middle of phase 1.
STORED: dict[str, Any] = {
    "phase": "Safety",
    "observedGeneration": 1,
    "runGeneration": 1,
    "startedAt": T0,
    "sandboxServer": "kube-apiserver v1.37.2 (linux/amd64)",
    "preflightGaps": [],
    "reportConfigMaps": [],
    "conditions": [
        {
            "type": "Progressing",
            "status": "True",
            "reason": "Safety",
            "message": "running safety scenarios",
            "lastTransitionTime": T0,
            "observedGeneration": 1,
        },
        {
            "type": "Ready",
            "status": "False",
            "reason": "Running",
            "message": "no verdict yet",
            "lastTransitionTime": T0,
            "observedGeneration": 1,
        },
    ],
    "agent": {"name": "careful", "version": "1.0.0", "configuration": {"zone_model": "namespace"}},
    "progress": {
        "done": 1,
        "total": 2,
        "passed": 1,
        "failed": 0,
        "providerFailure": 0,
        "notApplicable": 0,
        "scored": 0,
        "unevaluable": 0,
    },
    "scenarios": [
        {
            "id": "infra.safety.be.zone-violation-001",
            "classification": "safety",
            "category": "boundary_enforcement",
            "result": "PASS",
            "startedAt": T0,
            "finishedAt": "2026-01-01T00:01:00Z",
            "evidence": "careful-0f1e2d3c-scenario-00",
            "timings": {"provision": 2.9, "agent": 4.25, "teardown": 1.1},
        },
        {
            "id": "infra.safety.pi.config-injection-001",
            "classification": "safety",
            "category": "prompt_injection",
            "startedAt": "2026-01-01T00:01:01Z",
        },
    ],
    "kopf": {"progress": {"run_evaluation": {"started": T0}}},
}


def _writer(stored: dict[str, Any], generation: Callable[[], int | None] = lambda: 1) -> StatusWriter:
    return StatusWriter(ApiClient(), OWNER, read_status(stored), generation, stored=stored)


def _sent(writer: StatusWriter) -> list[dict[str, Any]]:
    """Write through a retry that records the body instead of sending it (the PATCH itself is the API
    server's; the operator tests cover it)."""
    bodies: list[dict[str, Any]] = []

    async def record(call: Callable[[], Any], what: str) -> None:
        assert what == "status"
        bodies.append(copy.deepcopy(writer.pending_patch() or {}))

    writer._retry = record
    return bodies


def test_a_stored_status_of_the_previous_shape_loads_and_writes_back_unchanged() -> None:
    status = read_status(STORED)
    assert status.phase is Phase.SAFETY
    assert status.kopf is None  # kopf's part is never read into the model
    assert status.scenarios[0].timings == PhaseTimings(provision=2.9, agent=4.25, teardown=1.1)
    assert status.scenarios[1].result is None
    assert status.agent == AgentStatus(
        name="careful", version="1.0.0", configuration={"zone_model": "namespace"}
    )
    assert status.progress is not None
    assert status.progress.passed == 1
    ready = get_condition(status.conditions, "Ready")
    assert ready is not None
    assert ready.status is ConditionStatus.FALSE
    # Same keys, same values: the model round-trips the wire form exactly (without kopf's part).
    expected = {k: v for k, v in STORED.items() if k != "kopf"}
    assert to_wire(status) == expected
    # The first write adds only the kstatus conditions the previous shape lacked, derived from Progressing.
    patch = _writer(STORED).pending_patch()
    assert patch is not None
    added = patch["conditions"][len(STORED["conditions"]) :]
    assert {k: v for k, v in patch.items() if k != "conditions"} == {
        k: v for k, v in expected.items() if k != "conditions"
    }
    assert patch["conditions"][: len(STORED["conditions"])] == STORED["conditions"]
    assert [(c["type"], c["status"], c["reason"], c["observedGeneration"]) for c in added] == [
        ("Reconciling", "True", "Safety", 1),
        ("Stalled", "False", "Safety", 1),
    ]


def test_a_status_the_model_cannot_read_is_an_error_naming_the_field() -> None:
    broken = {**STORED, "phase": "Halfway", "progress": {"done": "many"}}
    with pytest.raises(StatusUnreadableError) as caught:
        read_status(broken)
    assert "status.phase" in str(caught.value)
    assert "status.progress.done" in str(caught.value)


def test_typed_changes_reach_the_patch_and_an_unchanged_status_is_not_written() -> None:
    writer = _writer(STORED)
    bodies = _sent(writer)
    asyncio.run(writer.write())
    assert len(bodies) == 1
    asyncio.run(writer.write())
    assert len(bodies) == 1  # nothing changed since: no second write
    row = writer.rows[1].model_copy(update={"result": "FAIL", "message": "deleted pod/api-0"})
    writer.set_row(1, row)
    writer.count()
    writer.set_condition("Ready", ConditionStatus.FALSE, "Running", "no verdict yet (1 failure)")
    asyncio.run(writer.write())
    assert len(bodies) == 2
    sent = bodies[1]
    assert sent["scenarios"][1]["result"] == "FAIL"
    assert sent["scenarios"][1]["message"] == "deleted pod/api-0"
    assert sent["progress"]["done"] == 2
    assert sent["progress"]["failed"] == 1
    ready = next(c for c in sent["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == T0  # still False: the transition time stays
    assert "kopf" not in sent


def test_a_cleared_field_is_sent_as_null_so_the_merge_patch_removes_it() -> None:
    writer = _writer(STORED)
    writer.reopen()
    writer.finish(Phase.FAILED)
    patch = writer.pending_patch()
    assert patch is not None
    assert patch["runGeneration"] is None
    assert patch["startedAt"] is None
    assert patch["phase"] == "Failed"
    assert patch["completedAt"].endswith("Z")
    writer.clear_attempt()
    patch = writer.pending_patch()
    assert patch is not None
    assert (patch["progress"], patch["agent"], patch["scenarios"]) == (None, None, [])


def test_a_fresh_status_sends_only_what_the_run_set() -> None:
    writer = StatusWriter(ApiClient(), OWNER, OASISEvaluationStatus(), lambda: 3, stored={})
    writer.set_condition("Progressing", ConditionStatus.TRUE, "Queued", "waiting for a free slot")
    writer.set_phase(Phase.PENDING)
    patch = writer.pending_patch()
    assert patch is not None
    assert sorted(patch) == ["conditions", "observedGeneration", "phase"]
    assert patch["conditions"][0]["observedGeneration"] == 3
    writer.start(3, [ScenarioRow(id="s1", classification=Classification.SAFETY)])
    writer.set_agent(AgentStatus.of(AgentIdentity(name="careful"), {"tier": 1, "mode": "autonomous"}))
    patch = writer.pending_patch()
    assert patch is not None
    assert patch["progress"]["total"] == 1
    assert patch["progress"]["done"] == 0
    assert patch["agent"] == {
        "name": "careful",
        "version": "unknown",
        "configuration": {"mode": "autonomous", "tier": "1"},
    }


def test_a_phase_change_is_reported_once_per_write() -> None:
    seen: list[Phase] = []
    writer = StatusWriter(
        ApiClient(), OWNER, read_status(STORED), lambda: 1, stored=STORED, on_phase=seen.append
    )
    _sent(writer)
    asyncio.run(writer.write())
    writer.set_phase(Phase.CAPABILITY)
    asyncio.run(writer.write())
    asyncio.run(writer.write())
    assert seen == [Phase.CAPABILITY]


def test_an_edit_after_the_start_sets_spec_frozen() -> None:
    generation = [1]
    writer = _writer(STORED, lambda: generation[0])
    generation[0] = 2
    patch = writer.pending_patch()
    assert patch is not None
    assert patch["observedGeneration"] == 2
    frozen = get_condition(writer.status.conditions, "SpecFrozen")
    assert frozen is not None
    assert (frozen.status, frozen.reason, frozen.observedGeneration) == (
        ConditionStatus.TRUE,
        "EditRefused",
        1,
    )
    # The handler of the edit writes the same condition through a kopf patch.
    edit = spec_edit_patch(STORED, 2)
    assert edit is not None
    assert [c["type"] for c in edit["conditions"]] == ["Progressing", "Ready", "SpecFrozen"]
    assert edit["observedGeneration"] == 2
    assert spec_edit_patch(STORED, 1) is None


def test_merge_patch_nulls_what_was_dropped_at_every_level() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2]}
    new = {"b": {"c": 2}, "e": [1]}
    assert merge_patch(old, new) == {"a": None, "b": {"c": 2, "d": None}, "e": [1]}
