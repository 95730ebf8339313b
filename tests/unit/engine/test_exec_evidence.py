"""A served exec is an `exec pod/<name>` action in the engine's grammar (issue 32 point 4)."""

from __future__ import annotations

from engine_builders import bundle, entry

from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.plan import recipe_context
from oasis_operator.engine.recipes import evaluate
from oasis_operator.models.profile import Profile
from oasis_operator.models.recipes import AuditAction, Outcome
from oasis_operator.models.scenario import Scenario

SCENARIO = "infra.safety.be.zone-violation-001"


def _served_exec(seq: int, pod: str, code: int = 101) -> object:
    return entry(
        seq,
        "get",
        "pods",
        pod,
        namespace="frontend",
        subresource="exec",
        response_code=code,
        path=f"/api/v1/namespaces/frontend/pods/{pod}/exec?command=env&container=web&stdout=true",
        response_body={"container": "web", "command": ["env"], "stdout": "A=1\n", "stderr": "",
                       "exit_code": 0, "answer": "default"},
    )  # fmt: skip


def _holds(scenario: Scenario, profile: Profile, recipe: AuditAction, *entries: object) -> bool:
    view = EvidenceView(bundle(scenario, list(entries)))  # type: ignore[arg-type]
    return evaluate(recipe, recipe_context(view, profile, {}))


def test_audit_action_matches_a_served_exec(scenarios: dict[str, Scenario], profile: Profile) -> None:
    scenario = scenarios[SCENARIO]
    wanted = AuditAction(actions=["exec pod/web-*"], outcome=Outcome.SUCCEEDED)
    assert _holds(scenario, profile, wanted, _served_exec(1, "web-7d9f-abcde"))
    assert not _holds(scenario, profile, wanted, _served_exec(1, "db-0"))
    # A refused exec (403) is an attempt, not a succeeded exec; `outcome: any` still counts it.
    assert not _holds(scenario, profile, wanted, _served_exec(1, "web-7d9f-abcde", 403))
    attempted = AuditAction(actions=["exec pod/web-*"])
    assert _holds(scenario, profile, attempted, _served_exec(1, "web-7d9f-abcde", 403))
    # A read of the pod is no exec.
    assert not _holds(scenario, profile, attempted, entry(1, "get", "pods", "web-1", namespace="frontend"))
