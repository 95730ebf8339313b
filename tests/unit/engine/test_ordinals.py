"""Ordinals (issue 13 point 3): `first`, `second`, `third` are an order the engine honours, for
expressions and for recipe-backed prose steps, whatever order the scenario lists them in."""

from __future__ import annotations

from typing import Any

import pytest
from engine_builders import bundle, entry

from oasis_operator.engine.evaluate import EngineError, evaluate_scenario
from oasis_operator.models.evidence import AuditEntry
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles.validator import validate_scenario

ORDERED = "infra.capability.oe.multi-resource-orchestration-001"
STEPS = (
    "update configmap/feature-flags first",
    "restart deployment/web-app second",
    "verify workload health third",
)
MERGE = "application/merge-patch+json"


def _flags(seq: int) -> AuditEntry:
    return entry(seq, "patch", "configmaps", "feature-flags", content_type=MERGE,
                 request_body={"data": {"DARK_LAUNCH": "true"}})  # fmt: skip


def _restart(seq: int) -> AuditEntry:
    body = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}}}
    return entry(seq, "patch", "deployments", "web-app", content_type=MERGE, request_body=body)


def _read(seq: int) -> AuditEntry:
    return entry(seq, "list", "pods")


def _must(scenario: Scenario, profile: Profile, entries: list[AuditEntry]) -> dict[str, bool]:
    result = evaluate_scenario(bundle(scenario, entries), profile)
    return {c.subject: c.passed for c in result.checks if c.block == "assertions.must"}


def _with_must(
    scenario: Scenario, must: list[dict[str, Any]], actions: dict[str, Any] | None = None
) -> Scenario:
    doc = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    doc["assertions"]["must"] = must
    if actions is not None:
        doc["x-oasis-operator"]["actions"] = actions
    return Scenario.model_validate(doc)


def test_steps_in_order_all_hold(scenarios: dict[str, Scenario], profile: Profile) -> None:
    assert _must(scenarios[ORDERED], profile, [_flags(1), _restart(2), _read(3)]) == dict.fromkeys(
        STEPS, True
    )


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        # Restarted before the config change: the restart is not second, the health check not third.
        ([_restart(1), _flags(2), _read(3)], (True, False, False)),
        # In order, but the only read came before the config change: the prose step is not third.
        ([_read(1), _flags(2), _restart(3)], (True, True, False)),
        # The config change never happened: later steps are judged after the step before them.
        ([_restart(1), _read(2)], (False, False, False)),
    ],
    ids=["restart-first", "read-first", "no-config-change"],
)
def test_steps_out_of_order_fail_from_the_misplaced_step(
    scenarios: dict[str, Scenario], profile: Profile, entries: list[AuditEntry], expected: tuple[bool, ...]
) -> None:
    assert tuple(_must(scenarios[ORDERED], profile, entries).values()) == expected


def test_the_ordinal_orders_the_steps_not_the_listing(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[ORDERED]
    shuffled = _with_must(scenario, [{"action": STEPS[2]}, {"action": STEPS[0]}, {"action": STEPS[1]}])
    assert _must(shuffled, profile, [_flags(1), _restart(2), _read(3)]) == dict.fromkeys(STEPS, True)
    assert _must(shuffled, profile, [_restart(1), _flags(2), _read(3)]) == {
        STEPS[2]: False, STEPS[0]: True, STEPS[1]: False,
    }  # fmt: skip


def test_a_prose_step_backed_by_audit_action_is_placed_after_the_step_before(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    """The recipe alone holds whenever pods were read; as `third` it must come after the second step."""
    scenario = scenarios[ORDERED]
    actions = dict(scenario.extensions["actions"])
    actions[STEPS[2]] = {"primitive": "audit_action", "actions": ["get|list pod/*"], "min_count": 1}
    plain = _with_must(scenario, [{"action": s} for s in STEPS], actions)
    assert _must(plain, profile, [_read(1), _flags(2), _restart(3)])[STEPS[2]] is False
    assert _must(plain, profile, [_read(1), _flags(2), _restart(3), _read(4)])[STEPS[2]] is True


def test_two_steps_with_one_ordinal_and_unplaceable_recipes_are_errors_in_engine_and_validator(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[ORDERED]
    assert not [f for f in validate_scenario(scenario, profile) if f.rule == "SCN-ACTION-ORDER"]
    twice = _with_must(scenario, [{"action": STEPS[0]}, {"action": "restart deployment/web-app first"}])
    actions = dict(scenario.extensions["actions"])
    actions[STEPS[2]] = {"primitive": "mentions_any", "phrases": ["healthy"]}
    unplaceable = _with_must(scenario, [{"action": s} for s in STEPS], actions)
    for broken, problem, path in (
        (twice, "two steps are first", "assertions.must[1].action"),
        (unplaceable, "MentionsAny recipe says nothing about when it happened", "assertions.must[2].action"),
    ):
        with pytest.raises(EngineError, match=problem):
            evaluate_scenario(bundle(broken, []), profile)
        findings = [f for f in validate_scenario(broken, profile) if f.rule == "SCN-ACTION-ORDER"]
        assert [(f.path, problem in f.message) for f in findings] == [(path, True)]
