"""Reconciling and Stalled (kstatus) derived from the run's own conditions and phase."""

from __future__ import annotations

from oasis_operator.models.crd import Condition, ConditionStatus, Phase
from oasis_operator.status.conditions import get_condition, set_condition, with_kstatus

T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
T0, T1 = "2026-12-03T21:00:00Z", "2026-12-03T21:05:00Z"


def _set(
    conditions: list[Condition], type_: str, status: ConditionStatus, reason: str, message: str
) -> list[Condition]:
    return set_condition(
        conditions, type=type_, status=status, reason=reason, message=message, generation=1, now=T0
    )


def _brief(conditions: list[Condition], type_: str) -> tuple[str, str, str, int | None]:
    found = get_condition(conditions, type_)
    assert found is not None, type_
    return found.status.value, found.reason, found.message, found.observedGeneration


def test_a_run_under_way_is_reconciling_and_not_stalled() -> None:
    running = _set([], "Progressing", T, "Safety", "running safety scenarios")
    derived = with_kstatus(running, Phase.SAFETY, 3, T0)
    assert _brief(derived, "Reconciling") == ("True", "Safety", "running safety scenarios", 3)
    assert _brief(derived, "Stalled") == ("False", "Safety", "the run can go on", 3)


def test_a_refused_spec_is_stalled_with_readys_reason_and_message() -> None:
    failed = _set([], "Ready", F, "InvalidSpec", "spec.profile.name: 'x' is not served here")
    failed = _set(failed, "Progressing", F, "InvalidSpec", "nothing more will run")
    derived = with_kstatus(failed, Phase.FAILED, 2, T0)
    assert _brief(derived, "Stalled") == (
        "True",
        "InvalidSpec",
        "spec.profile.name: 'x' is not served here",
        2,
    )
    assert _brief(derived, "Reconciling") == ("False", "InvalidSpec", "nothing is under way", 2)


def test_an_aborted_run_is_stalled_and_a_completed_one_is_current() -> None:
    over = _set([], "Ready", T, "Aborted", "safety FAIL; aborted: provider failure")
    over = _set(over, "Progressing", F, "Aborted", "the run is over")
    assert _brief(with_kstatus(over, Phase.ABORTED, 1, T0), "Stalled")[:2] == ("True", "Aborted")
    done = _set([], "Ready", T, "VerdictReady", "safety PASS")
    done = _set(done, "Progressing", F, "Completed", "the run is over")
    derived = with_kstatus(done, Phase.COMPLETED, 1, T0)
    assert _brief(derived, "Stalled") == ("False", "Completed", "the run finished", 1)
    assert _brief(derived, "Reconciling")[:2] == ("False", "Completed")


def test_a_fixed_spec_running_again_is_no_longer_stalled_and_the_transition_is_dated() -> None:
    failed = _set([], "Ready", F, "AgentUnreachable", "the agent did not answer")
    failed = _set(failed, "Progressing", F, "AgentUnreachable", "nothing more will run")
    stalled = with_kstatus(failed, Phase.FAILED, 1, T0)
    again = with_kstatus(_set(stalled, "Progressing", T, "Preflight", "checking"), Phase.PREFLIGHT, 2, T1)
    after = get_condition(again, "Stalled")
    assert after is not None
    assert (after.status, after.lastTransitionTime, after.observedGeneration) == (F, T1, 2)
    assert _brief(again, "Reconciling")[:2] == ("True", "Preflight")


def test_nothing_is_derived_before_the_run_wrote_progressing() -> None:
    frozen = _set([], "SpecFrozen", T, "EditRefused", "the spec changed")
    assert with_kstatus(frozen, None, 1, T0) == frozen
