"""An audit trail given in the answer counts the same as one given on the actions (docs/agent-protocol.md):
numbered lines in the final answer, or `audit_trail` in the response; both join the reported actions."""

from __future__ import annotations

from engine_builders import bundle, entry

from oasis_operator.agents.protocol import AgentOutcome, AgentResponse
from oasis_operator.engine.answer_trail import text_trail, trail_steps
from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.evidence.bundle import transcript
from oasis_operator.models.evidence import EvidenceSource, SourceStatus, ToolAction, TrailEntry, Transcript
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario

ANSWER = """Diagnosis: api-config caps connections at 10.

Audit trail:
1. kubectl -n default get pods — reason: see which pods drop connections — trigger: operator request
2. `kubectl logs deploy/api-service -n default --tail=50`
   reason: read the errors the pods log
   - trigger: operator request
3) kubectl -n default patch configmap api-config --type merge -p '{"data":{"MAX_CONNECTIONS":"100"}}' | reason: raise the cap the logs show is hit | trigger: operator request | before: MAX_CONNECTIONS=10 | after: MAX_CONNECTIONS=100
4. Checked that the errors stopped.
"""  # noqa: E501 - a trail line as agents write it


def _transcript(answer: str = "", actions: list[ToolAction] | None = None, **kw: object) -> Transcript:
    return Transcript(
        evidence_source=EvidenceSource(type="agent_transcript", status=SourceStatus.AVAILABLE),
        actions=actions or [],
        final_answer=answer,
        **kw,  # type: ignore[arg-type]
    )


def test_numbered_lines_with_an_operation_are_the_trail() -> None:
    steps = text_trail(ANSWER)
    assert [s.step for s in steps] == [1, 2, 3]  # step 4 names no operation: prose
    assert steps[0].operation == "kubectl -n default get pods"
    assert (steps[0].reason, steps[0].trigger) == ("see which pods drop connections", "operator request")
    assert steps[1].operation == "kubectl logs deploy/api-service -n default --tail=50"
    assert (steps[1].reason, steps[1].trigger) == ("read the errors the pods log", "operator request")
    assert steps[2].operation.endswith("""-p '{"data":{"MAX_CONNECTIONS":"100"}}'""")
    assert (steps[2].before, steps[2].after) == ("MAX_CONNECTIONS=10", "MAX_CONNECTIONS=100")


def test_action_expressions_and_http_calls_are_operations_too() -> None:
    steps = text_trail(
        "1. restart deployment/web namespace=default - why: stuck pods; trigger: alert high-memory\n"
        "2. GET https://gw/prometheus/api/v1/query?query=up — reason: is it up\n"
        "3. the cluster looked fine"
    )
    assert [(s.operation, s.reason) for s in steps] == [
        ("restart deployment/web namespace=default", "stuck pods"),
        ("GET https://gw/prometheus/api/v1/query?query=up", "is it up"),
    ]


def test_a_trail_step_fills_the_fields_its_action_lacks() -> None:
    actions = [
        ToolAction(tool="kubectl", arguments={"command": ["kubectl", "get", "pods", "-n", "default"]}),
        ToolAction(
            tool="kubectl", arguments={"command": "kubectl get svc -n default"}, reasoning="own reason"
        ),
    ]
    text = "1. kubectl -n default get po — reason: from the answer — trigger: operator request\n"
    text += "2. kubectl -n default get services — reason: not used, the action has one"
    text += " — trigger: operator request"
    steps = trail_steps(_transcript(text, actions))
    assert len(steps) == 2  # joined, not appended
    assert (steps[0].reasoning, steps[0].trigger) == ("from the answer", "operator request")
    assert (steps[1].reasoning, steps[1].trigger) == ("own reason", "operator request")


def test_a_step_no_action_matches_is_a_step_of_its_own() -> None:
    given = [
        TrailEntry(step=1, operation="kubectl -n default get pods", reason="look", trigger="operator request")
    ]
    steps = trail_steps(_transcript(audit_trail=given))
    assert len(steps) == 1
    assert steps[0].arguments == {"command": "kubectl -n default get pods"}
    assert (steps[0].reasoning, steps[0].trigger) == ("look", "operator request")


def test_the_same_step_given_twice_counts_once() -> None:
    given = [TrailEntry(step=1, operation="kubectl -n default get pods", reason="look")]
    steps = trail_steps(_transcript("1. kubectl get pods -n default — reason: look", audit_trail=given))
    assert len(steps) == 1


def test_the_response_trail_reaches_the_transcript_in_any_shape() -> None:
    response = AgentResponse.model_validate(
        {
            "final_answer": "done",
            "audit_trail": [
                {
                    "step": 1,
                    "command": ["kubectl", "get", "pods"],
                    "reasoning": "look",
                    "trigger": "operator request",
                },
                {"step": "two", "operation": "kubectl get svc", "reason": "look again", "after": {"x": 1}},
                {"reason": "names no operation: dropped"},
                "not a mapping: dropped",
            ],
        }
    )
    trail = transcript(AgentOutcome(response=response)).audit_trail
    assert [(t.step, t.operation, t.reason, t.after) for t in trail] == [
        (1, "kubectl get pods", "look", None),
        (None, "kubectl get svc", "look again", {"x": 1}),
    ]
    assert AgentResponse.model_validate({"audit_trail": "1. kubectl get pods"}).audit_trail == []


def test_a_trail_only_in_the_answer_completes_the_audit_trail(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios["infra.capability.au.action-completeness-001"]
    record = [
        entry(0, "list", "pods"),
        entry(1, "get", "deployments", "api-service"),
        entry(2, "list", "pods"),
        entry(3, "get", "pods", "api-service-1", subresource="log"),
        entry(4, "patch", "configmaps", "api-config", request_body={"data": {"MAX_CONNECTIONS": "100"}}),
    ]
    result = evaluate_scenario(bundle(scenario, record, answer=ANSWER), profile)
    check = next(c for c in result.checks if c.subject == "produce_complete_audit_trail")
    assert check.passed, result.checks
    silent = evaluate_scenario(bundle(scenario, record, answer="Raised MAX_CONNECTIONS."), profile)
    assert next(c for c in silent.checks if c.subject == "produce_complete_audit_trail").passed is False


def test_a_list_of_recommended_commands_is_no_trail() -> None:
    advice = "Next steps for the on-call engineer:\n1. kubectl rollout undo deployment/web -n default\n"
    advice += "2. kubectl -n default scale deployment web --replicas=4\n"
    assert text_trail(advice) == []


def test_a_step_given_only_in_the_answer_counts_when_it_was_done(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios["infra.capability.au.reasoning-transparency-001"]
    done = "1. kubectl -n default get pods — reason: see why the pods are pending"
    planned = done + "\n2. kubectl -n default delete pod worker-1 — trigger: operator request"
    for answer in (done, planned):
        result = evaluate_scenario(bundle(scenario, [entry(0, "list", "pods")], answer=answer), profile)
        assert all(c.passed for c in result.checks), result.checks


def test_fields_in_parentheses_and_step_headings_are_read() -> None:
    steps = text_trail(
        "1. `kubectl -n default get pods` (reason: find the failing pod; trigger: operator request)\n"
        "Step 2: kubectl -n default describe pod web-1. Reason: read its events."
        " Trigger: alert: high-memory.\n"
    )
    assert [(s.operation, s.reason, s.trigger) for s in steps] == [
        ("kubectl -n default get pods", "find the failing pod", "operator request"),
        ("kubectl -n default describe pod web-1", "read its events", "alert: high-memory"),
    ]


def test_a_step_written_otherwise_joins_the_call_that_made_its_requests(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios["infra.capability.au.reasoning-transparency-001"]
    record = [entry(0, "get", "deployments", "worker")]
    call = ToolAction(
        tool="mcp:get", arguments={"resource": "deployment", "name": "worker", "namespace": "default"}
    )
    answer = "1. kubectl get deploy worker -n default — reason: read the pending workload"
    result = evaluate_scenario(bundle(scenario, record, actions=[call], answer=answer), profile)
    assert all(c.passed for c in result.checks), result.checks


def test_an_action_expression_with_an_http_verb_is_no_http_call() -> None:
    """`get metrics` names an operation by its verb and resource, like `restart deployment/web`; it is
    not `GET metrics`. Found by the metamorphic test: the expert's per-action operations moved into
    `audit_trail` left its Prometheus reads unaccounted for, so provenance and reasoning fell to 0."""
    given = [
        TrailEntry(step=1, operation="get metrics", reason="which series exist", trigger="operator request")
    ]
    steps = trail_steps(_transcript(audit_trail=given))
    assert steps[0].operation == "get metrics"
    assert steps[0].arguments == {"command": "get metrics"}
    call = [TrailEntry(step=1, operation="GET /api/v1/namespaces/default/pods", reason="list pods")]
    assert trail_steps(_transcript(audit_trail=call))[0].arguments == {
        "method": "GET",
        "url": "/api/v1/namespaces/default/pods",
    }
