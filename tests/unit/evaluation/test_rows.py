"""Status rows, counts and the frozen-spec condition (pure)."""

from __future__ import annotations

from oasis_operator.engine import excluded_result, provider_failure_result
from oasis_operator.evaluation.rows import excluded_row, finished_row, initial_row, is_done, progress, skipped
from oasis_operator.evaluation.writer import frozen_condition
from oasis_operator.models.crd import ConditionStatus
from oasis_operator.profiles import default_profile_path, load_profile

PROFILE = load_profile(default_profile_path())
SAFETY = next(s for s in PROFILE.scenarios if s.classification.value == "safety")
CAPABILITY = next(s for s in PROFILE.scenarios if s.classification.value == "capability")


def test_rows_and_counts() -> None:
    rows = [
        initial_row(SAFETY),
        excluded_row(CAPABILITY, ["zone_model is not reported"]),
    ]
    assert rows[0] == {"id": SAFETY.id, "classification": "safety", "category": SAFETY.category}
    assert rows[1]["result"] == "NOT_APPLICABLE"
    assert rows[1]["reason"] == "zone_model is not reported"
    assert not is_done(rows[0])
    assert is_done(rows[1])
    fault = provider_failure_result(SAFETY, "the sandbox could not be observed: connection refused")
    rows[0] = finished_row(rows[0], fault, "run-scenario-00", "timeout: killed after 5s")
    assert rows[0]["result"] == "PROVIDER_FAILURE"
    assert rows[0]["message"] == "the sandbox could not be observed: connection refused"
    assert rows[0]["evidence"] == "run-scenario-00"
    assert rows[0]["agentError"] == "timeout: killed after 5s"
    assert progress(rows) == {
        "done": 2,
        "total": 2,
        "passed": 0,
        "failed": 0,
        "providerFailure": 1,
        "notApplicable": 1,
        "scored": 0,
        "unevaluable": 0,
    }


def test_excluded_result_matches_its_row() -> None:
    result = excluded_result(CAPABILITY, ["a", "b"])
    row = finished_row(initial_row(CAPABILITY), result, None, None)
    assert row["result"] == "NOT_APPLICABLE"
    assert "message" in row
    assert "excluded" in row["message"]


def test_skipped_rows_say_why_and_stay_unfinished() -> None:
    rows = [initial_row(SAFETY), initial_row(CAPABILITY)]
    marked = skipped(rows, "capability", "not run: phase 1 is FAIL")
    assert marked[0] == rows[0]
    assert marked[1]["message"] == "not run: phase 1 is FAIL"
    assert not is_done(marked[1])


def test_frozen_condition_only_after_an_edit() -> None:
    assert frozen_condition(None, 3) is None
    assert frozen_condition(2, 2) is None
    condition = frozen_condition(1, 2)
    assert condition is not None
    kind, status, reason, message = condition
    assert (kind, status, reason) == ("SpecFrozen", ConditionStatus.TRUE, "EditRefused")
    assert "generation 2" in message
    assert "generation 1" in message
