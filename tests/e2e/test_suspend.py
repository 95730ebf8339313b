"""`spec.suspend` as for a Job: a suspended evaluation starts nothing, a running one stops and holds, and
either goes on from its status once unsuspended, the scenarios judged before kept (evaluation.suspension).

The agent is the careful reference agent (command), the scenarios safety ones: one, or several to be
interrupted mid-run. Toggling `suspend` is not a spec edit: no SpecFrozen condition appears, and the run's
frozen generation follows the toggle.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import wait_for
from tests.e2e.support import (
    OperatorProcess,
    agent_command,
    condition,
    create,
    environments_of,
    evaluation,
    events,
    get,
    settle,
    wait_done,
    wait_phase,
)

ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
SEVERAL = {
    "ids": [
        "infra.safety.be.*",
        "infra.safety.do.*",
        "infra.safety.de.direct-secret-request-001",
        "infra.safety.sc.drift*",
    ]
}
TERMINAL = {"Completed", "Aborted", "Failed"}


def _suspend(custom: CustomObjectsApi, namespace: str, name: str, value: bool) -> None:
    patch = {"spec": {"suspend": value}}
    custom.patch_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", name, patch)


def _suspended(custom: CustomObjectsApi, namespace: str, name: str, value: str) -> dict[str, Any]:
    """The evaluation once its Suspended condition is `value` ("True"/"False")."""

    def said() -> dict[str, Any] | None:
        obj = get(custom, namespace, name)
        found = condition(obj, "Suspended")
        return obj if found is not None and found["status"] == value else None

    found: dict[str, Any] = wait_for(said, timeout=120, interval=0.5, what=f"{name} Suspended={value}")
    return found


def _no_spec_frozen(obj: dict[str, Any]) -> None:
    frozen = condition(obj, "SpecFrozen")
    assert frozen is None or frozen["status"] != "True", frozen


def test_an_evaluation_created_suspended_starts_nothing_and_runs_to_its_verdict_once_resumed(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    body = evaluation("held", agent_command("careful"), scenarios=ONE, suspend=True)
    create(custom, namespace, body)
    held = _suspended(custom, namespace, "held", "True")
    assert held["status"]["phase"] == "Pending"
    assert "runGeneration" not in held["status"]
    assert condition(held, "Progressing")["reason"] == "Suspended"  # type: ignore[index]
    assert condition(held, "Reconciling")["status"] == "False"  # type: ignore[index]
    settle(5)  # still nothing: no run started, no sandbox made
    again = get(custom, namespace, "held")
    assert again["status"]["phase"] == "Pending"
    assert "runGeneration" not in again["status"]
    assert environments_of(api, namespace, "held") == []
    _suspend(custom, namespace, "held", False)
    done = wait_phase(custom, namespace, "held", timeout=600)
    assert done["status"]["phase"] == "Completed"
    assert done["status"]["summary"]["safety"] == "PASS"
    assert condition(done, "Suspended")["reason"] == "Resumed"  # type: ignore[index]
    _no_spec_frozen(done)
    reasons = [reason for _, reason, _ in events(api, namespace, "held")]
    # (Events carry whole seconds: Resumed and Started may share one, so no order is asserted between
    # them; that nothing started while held is asserted above. The verdict's own event may still be on
    # its way: the phase above says it.)
    assert {"Suspended", "Resumed", "Started"} <= set(reasons)
    assert "Traceback" not in operator.log_text()


def test_suspending_a_running_evaluation_stops_its_scenarios_and_resuming_keeps_the_judged_ones(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(custom, namespace, evaluation("long", agent_command("careful"), scenarios=SEVERAL))
    wait_done(custom, namespace, "long", 1, timeout=300)
    _suspend(custom, namespace, "long", True)
    stopped = _suspended(custom, namespace, "long", "True")
    assert stopped["status"]["phase"] not in TERMINAL
    assert "stopped" in condition(stopped, "Suspended")["message"]  # type: ignore[index]
    wait_for(lambda: not environments_of(api, namespace, "long"), timeout=60, what="sandboxes torn down")
    held = get(custom, namespace, "long")["status"]
    settle(5)  # held: no scenario runs or finishes meanwhile
    still = get(custom, namespace, "long")
    assert still["status"]["progress"] == held["progress"]
    assert environments_of(api, namespace, "long") == []
    _no_spec_frozen(still)
    _suspend(custom, namespace, "long", False)
    done = wait_phase(custom, namespace, "long", timeout=900)
    status = done["status"]
    assert status["phase"] == "Completed"
    assert status["progress"]["done"] == status["progress"]["total"]
    finished = {r["id"]: r["finishedAt"] for r in held["scenarios"] if r.get("finishedAt")}
    assert finished
    assert {r["id"]: r["finishedAt"] for r in status["scenarios"] if r["id"] in finished} == finished
    # The toggles were not edits: the run's frozen generation followed them, no SpecFrozen.
    _no_spec_frozen(done)
    assert status["runGeneration"] == done["metadata"]["generation"]
    reasons = [reason for _, reason, _ in events(api, namespace, "long")]
    assert "Suspending" in reasons
    assert "Resumed" in reasons
    assert "SpecFrozen" not in reasons
    assert environments_of(api, namespace, "long") == []
    assert "Traceback" not in operator.log_text()


def test_suspending_a_finished_evaluation_changes_nothing(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(custom, namespace, evaluation("over", agent_command("careful"), scenarios=ONE))
    done = wait_phase(custom, namespace, "over", timeout=600)
    _suspend(custom, namespace, "over", True)
    settle(4)
    after = get(custom, namespace, "over")
    assert after["status"]["phase"] == done["status"]["phase"] == "Completed"
    assert after["status"]["summary"] == done["status"]["summary"]
    assert condition(after, "Suspended") is None
    assert after["status"]["observedGeneration"] == after["metadata"]["generation"]
    assert "SpecFrozen" not in [reason for _, reason, _ in events(api, namespace, "over")]
