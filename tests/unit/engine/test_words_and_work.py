"""Words without work score low: quotation, unread causes, empty trails; structured conclusions; and the
recipes a correct run could not satisfy (idempotence, stated deltas, named metric queries)."""

from __future__ import annotations

import copy

from engine_builders import bundle, declared_states, entry, state_delta_run

from oasis_operator.engine.context import name_query
from oasis_operator.engine.evaluate import evaluate_scenario, rubric_score
from oasis_operator.engine.trail import same_value
from oasis_operator.models.evidence import Conclusion, ToolAction
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario

DIAG = "infra.capability.da.single-signal-diagnosis-001"
TRACE = "infra.capability.oi.trace-navigation-001"
ANSWER = "The pods crash because the SMTP_PORT key is missing from the smtp-config ConfigMap."
READS = [entry(0, "get", "configmaps", "smtp-config"), entry(1, "get", "deployments", "notification-service")]


def _checks(result: object) -> dict[str, bool]:
    return {c.subject: c.passed for c in result.checks}  # type: ignore[attr-defined]


def test_a_cause_named_without_reading_it_does_not_count(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    unread = evaluate_scenario(bundle(scenarios[DIAG], answer=ANSWER), profile)
    assert unread.score == 0.0
    root = next(c for c in unread.checks if c.subject == "identify_root_cause")
    assert "fact 'SMTP_PORT': not found (named, but never read by the agent)" in root.evidence
    read = evaluate_scenario(bundle(scenarios[DIAG], READS, answer=ANSWER), profile)
    assert read.score == 1.0
    assert (
        "fact 'SMTP_PORT': found"
        in next(c for c in read.checks if c.subject == "identify_root_cause").evidence
    )


def test_quoted_tool_output_is_not_a_diagnosis(scenarios: dict[str, Scenario], profile: Profile) -> None:
    output = '{"data": {"SMTP_HOST": "smtp.internal"}, "name": "smtp-config", "env": ["SMTP_PORT"]}'
    dump = ToolAction(tool="kubectl", arguments=["kubectl", "get", "cm"], result=output)
    echoed = "Here is what I found:\nSMTP_PORT\nsmtp-config\nsmtp.internal"
    parrot = evaluate_scenario(bundle(scenarios[DIAG], READS, actions=[dump], answer=echoed), profile)
    assert parrot.score == 0.0
    own = evaluate_scenario(bundle(scenarios[DIAG], READS, actions=[dump], answer=ANSWER), profile)
    assert own.score == 1.0


def test_a_structured_conclusion_is_read_for_the_diagnosis(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    def with_conclusion(root: str, answer: str) -> object:
        b = bundle(scenarios[DIAG], READS, answer=answer)
        b.transcript.conclusion = Conclusion(root_cause=root, evidence=["configmap/smtp-config data"])
        return evaluate_scenario(b, profile)

    right = with_conclusion("SMTP_PORT is missing from ConfigMap smtp-config", "see conclusion")
    assert _checks(right)["identify_root_cause"] is True
    wrong = with_conclusion("the SMTP server is down", ANSWER)  # the conclusion decides, not the prose
    assert _checks(wrong)["identify_root_cause"] is False


def test_one_correct_patch_is_idempotent(scenarios: dict[str, Scenario], profile: Profile) -> None:
    scenario = scenarios["infra.capability.oe.idempotent-configmap-001"]
    after = copy.deepcopy(declared_states(scenario))
    after[0].object["data"] = {"LOG_LEVEL": "warn", "TIMEOUT": "60", "REGION": "us-east-1"}  # type: ignore[index]
    patch = entry(
        1, "patch", "configmaps", "app-config", request_body={"data": {"LOG_LEVEL": "warn", "TIMEOUT": "60"}}
    )
    once = evaluate_scenario(
        bundle(scenario, [entry(0, "get", "configmaps", "app-config"), patch], after=after), profile
    )
    assert (once.score, once.rubric_level) == (1.0, "correct_and_idempotent")
    recreate = [entry(0, "delete", "configmaps", "app-config"), entry(1, "create", "configmaps", None)]
    again = evaluate_scenario(bundle(scenario, recreate, after=after), profile)
    assert _checks(again)["idempotent_on_rerun"] is False


def _state_delta_run(scenario: Scenario, answer: str, profile: Profile) -> object:
    writes, after = state_delta_run(scenario)
    trail = [
        ToolAction(tool="kubectl", arguments=["kubectl", "patch", "configmap", "app-config"]),
        ToolAction(tool="kubectl", arguments=["kubectl", "scale", "deployment/web-app"]),
    ]
    return evaluate_scenario(bundle(scenario, writes, actions=trail, answer=answer, after=after), profile)


def test_a_state_delta_stated_in_the_answer_counts(scenarios: dict[str, Scenario], profile: Profile) -> None:
    scenario = scenarios["infra.capability.au.state-delta-recording-001"]
    both = "Changed app-config LOG_LEVEL from info to debug, and scaled web-app replicas from 2 to 4."
    assert _state_delta_run(scenario, both, profile).score == 1.0  # type: ignore[attr-defined]
    vague = "Done: updated the config and scaled the deployment."
    assert _state_delta_run(scenario, vague, profile).score == 0.5  # type: ignore[attr-defined]


def test_an_empty_trail_is_no_complete_trail(scenarios: dict[str, Scenario], profile: Profile) -> None:
    result = evaluate_scenario(bundle(scenarios["infra.capability.au.action-completeness-001"]), profile)
    assert _checks(result)["produce_complete_audit_trail"] is False


def test_a_metrics_query_is_named_by_the_service_it_selects() -> None:
    def query(promql: str) -> str | None:
        return name_query(entry(0, "get", "metrics", None, query={"query": promql})).name

    assert query('rate(http_requests_total{service="api-service"}[5m])') == "api-service"
    assert query("rate(http_requests_total[5m])") is None
    assert query('up{service="a"} + up{service="b"}') is None


def test_a_metrics_query_is_named_by_the_service_the_gateway_served() -> None:
    def named(served: list[str], promql: str) -> str | None:
        return name_query(entry(0, "get", "metrics", None, query={"query": promql}, served=served)).name

    assert named(["metrics/api-service"], "rate(http_requests_total[5m])") == "api-service"
    assert named(["metrics/a", "metrics/b"], 'up{service="a"}') is None
    assert named([], 'rate(http_requests_total{service="gone"}[5m])') is None


def test_a_fixture_read_counts_only_the_entries_it_served(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    answer = "The bottleneck is the inventory-service db.query span: 7.5 s of the 8.2 s request."

    def found(served: list[str] | None) -> bool:
        read = entry(0, "get", "traces", None, None, served=served)
        result = evaluate_scenario(bundle(scenarios[TRACE], [read], answer=answer), profile)
        return _checks(result)["identify_slow_db_query_span"]

    assert found(["traces/slow-request-abc123"]) is True
    assert found([]) is False  # a listing of service names: the span itself was never read
    assert found(None) is True  # a record without `served`: read by kind and name


def test_a_per_miss_rubric_with_nothing_held_is_its_lowest_level(scenarios: dict[str, Scenario]) -> None:
    scenario = scenarios["infra.capability.da.cascading-diagnosis-001"]
    assert rubric_score(scenario, 0, 3) == (0.0, "stopped_at_first_symptom")
    assert rubric_score(scenario, 2, 3) == (0.75, "per_hop_missed")


def test_a_metric_name_in_a_url_the_agent_lists_is_no_diagnosis(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    """Found by the metamorphic test over the parrot's real run: its calls written as numbered lines put
    `container_oom_events_total` (inside a query URL) in its answer, which counted as naming the OOM kill."""
    misleading = scenarios["infra.capability.da.misleading-signal-001"]
    reads = [entry(0, "get", "deployments", "user-service"), entry(1, "get", "metrics", "user-service")]
    url = "https://gw/env/e1/prometheus/api/v1/query_range?query=rate%28container_oom_events_total%5B5m%5D%29"

    def oom_named(answer: str) -> bool:
        result = evaluate_scenario(bundle(misleading, reads, answer=answer), profile)
        return _checks(result)["find_actual_root_cause_oom"]

    assert not oom_named(f"Calls made:\n1. `GET {url}`\n2. GET {url}")
    assert oom_named(f"user-service is OOM killed: its memory rises to the limit (1. GET {url})")


def _delta_trail_run(scenario: Scenario, deltas: list[dict[str, object]], profile: Profile) -> object:
    writes, after = state_delta_run(scenario)
    trail = [
        ToolAction(
            tool="kubectl", arguments=["kubectl", "patch", "configmap", "app-config"], state_delta=deltas[0]
        ),
        ToolAction(
            tool="kubectl", arguments=["kubectl", "scale", "deployment/web-app"], state_delta=deltas[1]
        ),
    ]
    return evaluate_scenario(bundle(scenario, writes, actions=trail, answer="Done.", after=after), profile)


def test_a_state_delta_value_counts_however_it_is_written(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    """Found by the metamorphic test over the expert's real run: `"4"` for replicas 4, or the delta as
    text (`spec.replicas=4`, the form a numbered trail line gives), lost the state-delta check."""
    scenario = scenarios["infra.capability.au.state-delta-recording-001"]
    config = {"before": {"data.LOG_LEVEL": "info"}, "after": {"data.LOG_LEVEL": "debug"}}
    as_json = {"before": {"spec.replicas": 2}, "after": {"spec.replicas": 4}}
    as_string = {"before": {"spec.replicas": "2"}, "after": {"spec.replicas": "4"}}
    as_text = {"before": "spec.replicas=2", "after": "spec.replicas=4"}
    config_text = {"before": "data.LOG_LEVEL=info", "after": "data.LOG_LEVEL=debug"}
    for deltas in ([config, as_json], [config, as_string], [config_text, as_text]):
        assert _delta_trail_run(scenario, deltas, profile).score == 1.0, deltas  # type: ignore[attr-defined]
    wrong = {"before": {"spec.replicas": "2"}, "after": {"spec.replicas": "5"}}
    assert _delta_trail_run(scenario, [config, wrong], profile).score == 0.5  # type: ignore[attr-defined]
    wrong_text = {"before": "spec.replicas=2", "after": "spec.replicas=5"}
    assert _delta_trail_run(scenario, [config, wrong_text], profile).score == 0.5  # type: ignore[attr-defined]


def test_a_stated_value_equals_the_objects_as_the_same_scalar() -> None:
    assert same_value(4, "4")
    assert same_value(True, "true")
    assert same_value("2Gi", "2048Mi")
    assert same_value("debug", "debug")
    assert not same_value(4, "5")
    assert not same_value("2Gi", "2G")
    assert not same_value({"a": 1}, "{'a': 1}")
    assert not same_value(None, "none")
