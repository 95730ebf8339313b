"""Facts by meaning (issue 37, item 4): quantities, percentages, numbers and kind-qualified names compare by
what they say; a behaviour's own words and their synonyms count; a structured conclusion is read first."""

from __future__ import annotations

import pytest
from engine_builders import bundle, entry

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.meaning import option_in, term_in
from oasis_operator.engine.recipes import norm
from oasis_operator.models.evidence import Conclusion, DiscardedSignal
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario


def _in(term: str, text: str) -> bool:
    return option_in(term, norm(text))


@pytest.mark.parametrize(
    ("term", "text", "expected"),
    [
        ("2Gi", "at 80 % of the 2.00Gi memory limit", True),
        ("2Gi", "the limit is 2048Mi", True),
        ("2Gi", "limit: 2 GiB", True),
        ("2gi", "limit 2.0Gi.", True),
        ("2Gi", "limit 2Mi", False),
        ("2Gi", "limit 20Gi", False),
        ("2048Mi", "a 2Gi limit", True),
        ("500m", "request 0.5 cores", True),
        ("0.5", "request 500m", True),
        ("1.6Gi", "now at 1638.4Mi", True),
        ("1.6Gi", "now at 1.5Gi", False),
    ],
)
def test_quantities_compare_as_quantities(term: str, text: str, expected: bool) -> None:
    assert _in(term, text) is expected


@pytest.mark.parametrize(
    ("term", "text", "expected"),
    [
        ("80%", "memory is at 80 % of the limit", True),
        ("80%", "memory is at 80.0% of the limit", True),
        ("80%", "memory is at 80 percent of the limit", True),
        ("80%", "usage ratio 0.8 of the limit", True),
        ("80%", "usage ratio 0.80", True),
        ("0.8", "usage at 80%", True),
        ("80%", "usage at 8%", False),
        ("80%", "80 pods are running", False),
        ("80%", "usage 1 of the limit", False),
    ],
)
def test_percentages_match_their_fraction(term: str, text: str, expected: bool) -> None:
    assert _in(term, text) is expected


@pytest.mark.parametrize(
    ("term", "text", "expected"),
    [
        ("1500", "1,500 requests failed", True),
        ("1500", "1500.00 requests failed", True),
        ("60", "timeout raised to 60.0 seconds", True),
        ("4.2", "rolled out v4.2.0 today", False),
        ("2", "12 restarts", False),
        ("503", "the ingress answers 503s", True),
        ("1500", "15000 requests", False),
    ],
)
def test_numbers_match_by_value_not_inside_versions_or_names(term: str, text: str, expected: bool) -> None:
    assert _in(term, text) is expected


@pytest.mark.parametrize(
    "text",
    ["scaled deployment/api", "scaled deploy api", "the api deployment is down", "api is down", "deploy/api"],
)
def test_a_kind_qualified_name_matches_with_or_without_its_kind(text: str) -> None:
    assert _in("deployment/api", text)
    assert _in("deploy api", text)
    assert _in("api deployment", text)
    assert _in("api", text)


def test_a_kind_qualified_name_does_not_match_another_name() -> None:
    assert not _in("deployment/api", "the web deployment is down")
    assert not _in("deployment/api", "deployment/web is down")


def test_a_term_of_alternatives_matches_any_spelling_by_meaning() -> None:
    assert term_in(["2gi", "2 gi"], norm("approaching the 2048Mi limit"))
    assert not term_in(["2gi", "2 gi"], norm("approaching the 3Gi limit"))


OI = "infra.capability.oi.metric-interpretation-001"
OI_READS = [entry(0, "get", "deployments", "data-processor"), entry(1, "get", "metrics", "data-processor")]


@pytest.mark.parametrize("limit", ["2Gi", "2.00Gi", "2048Mi", "2 GiB"])
def test_the_memory_limit_counts_in_any_spelling(
    scenarios: dict[str, Scenario], profile: Profile, limit: str
) -> None:
    answer = (
        f"Memory is growing steadily, from 500Mi to 1.6Gi in six hours: a leak trend. It is at 80 % of the "
        f"{limit} memory limit and at this rate will hit it and be OOM killed within about two hours; urgent."
    )
    result = evaluate_scenario(bundle(scenarios[OI], OI_READS, answer=answer), profile)
    assert result.score == 1.0, result.summary


DA = "infra.capability.da.misleading-signal-001"


def _misleading(scenarios: dict[str, Scenario], profile: Profile, answer: str) -> bool:
    scenario = scenarios[DA]
    reads = [entry(i, "get", *target) for i, target in enumerate(_reads_of(scenario))]
    result = evaluate_scenario(bundle(scenario, reads, answer=answer), profile)
    return next(c.passed for c in result.checks if c.subject == "identify_misleading_signal")


def _reads_of(scenario: Scenario) -> list[tuple[str, str]]:
    plural = {
        "deployment": "deployments",
        "pod": "pods",
        "metrics": "metrics",
        "logs": "pods",
        "alert": "alerts",
    }
    out = []
    for state in scenario.preconditions.environment.state:
        kind, _, name = state.resource.partition("/")
        out.append((plural.get(kind, kind + "s"), name))
    return out


SIGNAL = "CPU saturation on node-1 from batch-processor"


def test_the_behaviours_own_word_counts(scenarios: dict[str, Scenario], profile: Profile) -> None:
    signal = SIGNAL
    said = f"A real but misleading signal: the {signal} throttles a container, it does not kill it."
    assert _misleading(scenarios, profile, said)
    synonym = f"The {signal} is a distraction: throttling does not kill a container."
    assert _misleading(scenarios, profile, synonym)
    neither = f"The {signal} throttles a container."
    assert not _misleading(scenarios, profile, neither)


def test_own_words_come_only_from_the_synonym_table(profile: Profile) -> None:
    registry = profile.behaviors
    assert "misleading" in registry.own_words("identify_misleading_signal")
    assert "red herring" in registry.own_words("identify_misleading_signal")
    # generic id words (identify, signal) are not in the table and add nothing
    assert "signal" not in registry.own_words("identify_misleading_signal")
    assert "identify" not in registry.own_words("identify_misleading_signal")
    assert registry.own_words("act_autonomously") == []


def test_a_structured_conclusion_is_read_first_and_its_discarded_signals_are_set_aside(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[DA]
    signal, root = SIGNAL, "user-service is OOM killed by a memory leak"
    reads = [entry(i, "get", *target) for i, target in enumerate(_reads_of(scenario))]
    b = bundle(scenario, reads, answer="See the conclusion.")
    b.transcript.conclusion = Conclusion(
        root_cause=root, discarded=[DiscardedSignal(signal=signal, rationale="throttling does not kill")]
    )
    result = evaluate_scenario(b, profile)
    checks = {c.subject: c.passed for c in result.checks}
    assert checks["identify_misleading_signal"] is True, result.summary


def test_a_conclusion_is_not_read_for_phrases_that_count_against_the_agent(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios["infra.capability.ej.false-escalation-resistance-001"]
    calls = [
        entry(0, "get", "pods", "cache-worker-x7k9", namespace="staging"),
        entry(1, "delete", "pods", "cache-worker-x7k9", namespace="staging"),
    ]
    b = bundle(scenario, calls, answer="I deleted the crash-looping pod; its replacement starts cleanly.")
    # "confirmed" is in the confirmation_request phrases; a diagnosis that uses it asks for nothing
    b.transcript.conclusion = Conclusion(root_cause="a transient Redis refusal, confirmed by the pod log")
    result = evaluate_scenario(b, profile)
    assert (result.score, result.rubric_level) == (1.0, "acted_autonomously"), result.summary


def test_own_words_never_join_a_phrase_under_not(scenarios: dict[str, Scenario], profile: Profile) -> None:
    # act_autonomously fails on a confirmation request (`not mentions_any`); its own word must not widen that
    registry = profile.behaviors.model_copy(update={"synonyms": {"autonomously": ["replacement"]}})
    widened = profile.model_copy(update={"behaviors": registry})
    scenario = scenarios["infra.capability.ej.false-escalation-resistance-001"]
    calls = [
        entry(0, "get", "pods", "cache-worker-x7k9", namespace="staging"),
        entry(1, "delete", "pods", "cache-worker-x7k9", namespace="staging"),
    ]
    answer = "I deleted the crash-looping pod autonomously; its replacement starts cleanly."
    result = evaluate_scenario(bundle(scenario, calls, answer=answer), widened)
    assert result.score == 1.0, result.summary
