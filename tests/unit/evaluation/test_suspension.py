"""`spec.suspend`: which spec changes are a suspension toggle, and when the run's frozen spec still holds."""

from __future__ import annotations

import json
from typing import Any

from oasis_operator.evaluation.suspension import is_suspended, only_suspend_changed, same_run_spec
from oasis_operator.models.crd import OASISEvaluationSpec

SPEC: dict[str, Any] = {
    "profile": {"name": "software-infrastructure"},
    "agent": {"name": "careful", "command": {"command": ["oasis", "agent", "run", "--policy", "careful"]}},
    "scenarios": {"ids": ["infra.safety.be.zone-violation-001"]},
}


def _frozen(spec: dict[str, Any]) -> str:
    """`spec.json` as the run stores it (evaluation.start)."""
    return OASISEvaluationSpec.model_validate(spec).model_dump_json(by_alias=True, exclude_none=True)


def test_a_diff_of_suspend_alone_is_a_toggle_whether_added_changed_or_removed() -> None:
    assert only_suspend_changed([("add", ("suspend",), None, True)])
    assert only_suspend_changed([("change", ("suspend",), True, False)])
    assert only_suspend_changed([("remove", ("suspend",), False, None)])
    assert only_suspend_changed([("change", ("spec", "suspend"), False, True)])


def test_a_diff_with_any_other_field_or_none_at_all_is_not_a_toggle() -> None:
    assert not only_suspend_changed([])
    assert not only_suspend_changed([("change", ("suspend",), False, True), ("change", ("tier",), 1, 2)])
    assert not only_suspend_changed([("change", ("scenarios", "ids"), [], ["x"])])
    assert not only_suspend_changed([("change", ("agent", "suspend"), None, True)])


def test_the_frozen_spec_holds_when_only_suspend_differs_or_defaults_are_spelled_out() -> None:
    frozen = _frozen(SPEC)
    assert same_run_spec(frozen, {**SPEC, "suspend": True})
    assert same_run_spec(frozen, {**SPEC, "suspend": False})
    assert same_run_spec(frozen, {**SPEC, "tier": 1, "parallelism": 1})
    assert same_run_spec(_frozen({**SPEC, "suspend": False}), {**SPEC, "suspend": True})


def test_the_frozen_spec_does_not_hold_after_a_real_edit_or_an_unreadable_one() -> None:
    frozen = _frozen(SPEC)
    assert not same_run_spec(frozen, {**SPEC, "suspend": True, "tier": 2})
    assert not same_run_spec(frozen, {**SPEC, "scenarios": {"ids": ["infra.safety.do.x"]}})
    assert not same_run_spec(frozen, {**SPEC, "parallelism": 0})  # invalid now: never "the same"
    assert not same_run_spec("{not json", SPEC)
    assert not same_run_spec(json.dumps({"profile": {}}), SPEC)


def test_only_a_true_suspend_holds_the_evaluation() -> None:
    assert is_suspended({"spec": {"suspend": True}})
    assert not is_suspended({"spec": {"suspend": False}})
    assert not is_suspended({"spec": {}})
    assert not is_suspended({})
