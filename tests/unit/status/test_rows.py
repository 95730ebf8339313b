"""Status rows, counts and the frozen-spec condition, as models (pure)."""

from __future__ import annotations

from oasis_operator.engine import aggregate, excluded_result, provider_failure_result
from oasis_operator.models.agent_failure import AgentFailure
from oasis_operator.models.agent_identity import AgentDeclaration
from oasis_operator.models.crd import (
    Condition,
    ConditionStatus,
    Progress,
    ScenarioRow,
)
from oasis_operator.models.results import ScenarioOutcome
from oasis_operator.models.scenario import Classification
from oasis_operator.models.verdict_summary import AgentFailuresSummary, AgentModelsSummary, VerdictSummary
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.status.conditions import get_condition, spec_frozen, spec_frozen_message
from oasis_operator.status.rows import (
    excluded_row,
    finished_row,
    initial_row,
    is_done,
    progress,
    skipped,
    summary,
)
from tests.unit.engine.test_aggregate import RUN, safety

PROFILE = load_profile(default_profile_path())
SAFETY = next(s for s in PROFILE.scenarios if s.classification.value == "safety")
CAPABILITY = next(s for s in PROFILE.scenarios if s.classification.value == "capability")
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def test_rows_and_counts() -> None:
    rows = [
        initial_row(SAFETY),
        excluded_row(CAPABILITY, ["zone_model is not reported"]),
    ]
    assert rows[0] == ScenarioRow(
        id=SAFETY.id, classification=Classification.SAFETY, category=SAFETY.category
    )
    assert rows[1].result == "NOT_APPLICABLE"
    assert rows[1].reason == "zone_model is not reported"
    assert not is_done(rows[0])
    assert is_done(rows[1])
    fault = provider_failure_result(SAFETY, "the sandbox could not be observed: connection refused")
    rows[0] = finished_row(rows[0], fault, "run-scenario-00", "timeout: killed after 5s")
    assert rows[0].result == "PROVIDER_FAILURE"
    assert rows[0].message == "the sandbox could not be observed: connection refused"
    assert rows[0].evidence == "run-scenario-00"
    assert rows[0].agentError == "timeout: killed after 5s"
    assert progress(rows) == Progress(
        done=2, total=2, passed=0, failed=0, providerFailure=1, notApplicable=1, scored=0, unevaluable=0
    )


def test_a_row_carries_only_what_was_set() -> None:
    row = initial_row(SAFETY)
    assert row.model_dump(mode="json", exclude_unset=True, exclude_none=True) == {
        "id": SAFETY.id,
        "classification": "safety",
        "category": SAFETY.category,
    }


def test_excluded_result_matches_its_row() -> None:
    result = excluded_result(CAPABILITY, ["a", "b"])
    row = finished_row(initial_row(CAPABILITY), result, None, None)
    assert row.result == "NOT_APPLICABLE"
    assert row.message is not None
    assert "excluded" in row.message


def test_skipped_rows_say_why_and_stay_unfinished() -> None:
    rows = [initial_row(SAFETY), initial_row(CAPABILITY)]
    marked = skipped(rows, Classification.CAPABILITY, "not run: phase 1 is FAIL")
    assert marked[0] == rows[0]
    assert marked[1].message == "not run: phase 1 is FAIL"
    assert not is_done(marked[1])


def test_frozen_condition_only_after_an_edit() -> None:
    assert spec_frozen_message(None, 3) is None
    assert spec_frozen_message(2, 2) is None
    assert spec_frozen([], 2, 2, T0) == []
    conditions = spec_frozen([], 1, 2, T0)
    condition = get_condition(conditions, "SpecFrozen")
    assert isinstance(condition, Condition)
    assert (condition.type, condition.status, condition.reason) == (
        "SpecFrozen",
        ConditionStatus.TRUE,
        "EditRefused",
    )
    assert "generation 2" in condition.message
    assert "generation 1" in condition.message
    assert condition.observedGeneration == 1
    # A second edit rewrites the message but keeps the time the condition became true.
    again = get_condition(spec_frozen(conditions, 1, 3, T1), "SpecFrozen")
    assert again is not None
    assert again.lastTransitionTime == T0
    assert "generation 3" in again.message


def test_the_summary_is_a_model_and_carries_only_what_the_verdict_has() -> None:
    results = [safety("a", ScenarioOutcome.PASS), safety("b", ScenarioOutcome.FAIL)]
    verdict = aggregate(results, PROFILE, RUN)
    out = summary(verdict, results)
    assert out == VerdictSummary(
        safety="FAIL",
        tier=1,
        aborted=False,
        failedScenarios=["b"],
        incomplete=False,
        agentFailures=AgentFailuresSummary(count=0, scenarios=[]),
        agentModels=AgentModelsSummary(declared=None, observed=[], heterogeneous=False),
    )
    assert out.model_dump(mode="json", exclude_unset=True, exclude_none=True) == {
        "safety": "FAIL",
        "tier": 1,
        "aborted": False,
        "failedScenarios": ["b"],
        "incomplete": False,
        "agentFailures": {"count": 0, "scenarios": []},
        "agentModels": {"observed": [], "heterogeneous": False},
    }


def test_the_summary_lists_agent_failures_and_marks_the_run_incomplete() -> None:
    report = AgentFailure(cause="model endpoint unreachable")
    results = [
        safety("a", ScenarioOutcome.UNEVALUABLE, agent_failure=report),
        safety("b", ScenarioOutcome.FAIL, agent_failure=report.model_copy(update={"cause": "x" * 500})),
    ]
    out = summary(aggregate(results, PROFILE, RUN), results)
    assert (out.safety, out.incomplete, out.unevaluableScenarios) == ("FAIL", True, ["a"])
    assert out.agentFailures.count == 2
    assert [(f.id, f.result) for f in out.agentFailures.scenarios] == [("a", "UNEVALUABLE"), ("b", "FAIL")]
    assert out.agentFailures.scenarios[0].cause == "model endpoint unreachable"
    assert len(out.agentFailures.scenarios[1].cause) == 200, "causes are cut to keep the status small"


def test_the_summary_lists_at_most_fifty_agent_failures_but_counts_all() -> None:
    report = AgentFailure(cause="gave up")
    results = [safety(f"s{i:03d}", ScenarioOutcome.UNEVALUABLE, agent_failure=report) for i in range(120)]
    out = summary(aggregate(results, PROFILE, RUN), results)
    assert out.safety == "NOT_EVALUATED"
    assert out.agentFailures.count == 120
    assert len(out.agentFailures.scenarios) == 50


def test_the_summary_flags_heterogeneous_models_and_lists_at_most_ten() -> None:
    results = [safety(f"s{i:02}", ScenarioOutcome.PASS, agent_model=f"model-{i % 12:02}") for i in range(24)]
    results.append(safety("s99", ScenarioOutcome.PASS, agent_model="model-03"))
    run = RUN.model_copy(update={"agent_declaration": AgentDeclaration(model="model-03")})
    models = summary(aggregate(results, PROFILE, run), results).agentModels
    assert models is not None
    assert (models.declared, models.heterogeneous) == ("model-03", True)
    assert models.observed[0] == "model-03"  # the most used first, then by name
    assert models.observed[1:] == [f"model-{i:02}" for i in (0, 1, 2, 4, 5, 6, 7, 8, 9)]


def test_the_summary_of_one_model_as_declared_is_not_heterogeneous() -> None:
    results = [safety(f"s{i}", ScenarioOutcome.PASS, agent_model="m") for i in range(3)]
    run = RUN.model_copy(update={"agent_declaration": AgentDeclaration(model="m")})
    models = summary(aggregate(results, PROFILE, run), results).agentModels
    assert models == AgentModelsSummary(declared="m", observed=["m"], heterogeneous=False)
