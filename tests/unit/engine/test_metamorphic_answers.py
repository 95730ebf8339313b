"""Metamorphic: a correct answer keeps its score when its numbers, names and words are written another way
(issue 37, item 6, the parts facts-by-meaning covers); answers that quote or say nothing stay low however
they are spelled.

The answers are written the way the reference expert reports (findings, root cause, ruled-out signals;
`agents/reference/expert/report.py`) over the reads it makes, since its real runs need a cluster. Each
rewrite changes spelling only: quantities (2Gi → 2.00Gi → 2048Mi → 2 GiB), percentages (80% → 80 % →
0.8), kind-qualified names and synonyms of a behaviour's own word.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from engine_builders import bundle, entry

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.models.evidence import AuditEntry, ToolAction
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from tests.agents.wordy import _words  # the parrot test agent's own way of reading results

OI = "infra.capability.oi.metric-interpretation-001"
DA = "infra.capability.da.single-signal-diagnosis-001"
MISLEADING = "infra.capability.da.misleading-signal-001"

RECORDED: dict[str, tuple[list[AuditEntry], str]] = {
    OI: (
        [entry(0, "get", "deployments", "data-processor"), entry(1, "get", "metrics", "data-processor")],
        "Findings (most important first):\n"
        "- data-processor memory is growing steadily: 500Mi, 800Mi, 1.2Gi, now 1.6Gi over six hours.\n"
        "Root cause: a memory leak trend; usage is at 80% of the 2Gi memory limit and at this rate it will "
        "be OOM killed within about two hours, so this is urgent.",
    ),
    DA: (
        [
            entry(0, "get", "configmaps", "smtp-config"),
            entry(1, "get", "deployments", "notification-service"),
        ],
        "Root cause: the pods crash because the SMTP_PORT key is missing from the smtp-config ConfigMap.",
    ),
    MISLEADING: (
        [
            entry(0, "get", "deployments", "user-service"),
            entry(1, "get", "pods", "batch-processor-x9k2"),
            entry(2, "get", "nodes", "node-1", namespace=None),
            entry(3, "get", "metrics", "user-service"),
        ],
        "Root cause: user-service is OOM killed by a memory leak; its memory rises until the limit.\n"
        "Ruled out: CPU saturation on node-1 from batch-processor is a real but misleading signal; CPU "
        "throttles a container, it does not kill it.",
    ),
}

Rewrite = Callable[[str], str]
REWRITES: dict[str, Rewrite] = {
    "as recorded": lambda text: text,
    "2.00Gi": lambda text: text.replace("2Gi", "2.00Gi"),
    "2048Mi": lambda text: text.replace("2Gi", "2048Mi").replace("1.6Gi", "1638.4Mi"),
    "2 GiB": lambda text: text.replace("2Gi", "2 GiB"),
    "80 %": lambda text: text.replace("80%", "80 %"),
    "fraction 0.8": lambda text: text.replace("at 80% of", "at 0.8 of"),
    "kind first": lambda text: text.replace("the smtp-config ConfigMap", "configmap/smtp-config"),
    "short kind": lambda text: text.replace("the smtp-config ConfigMap", "cm smtp-config"),
    "red herring": lambda text: text.replace("a real but misleading signal", "a red herring"),
    "distraction": lambda text: text.replace("a real but misleading signal", "a distraction"),
}


def _score(
    scenarios: dict[str, Scenario],
    profile: Profile,
    sid: str,
    answer: str,
    actions: list[ToolAction] | None = None,
) -> float:
    reads, _ = RECORDED[sid]
    result = evaluate_scenario(bundle(scenarios[sid], reads, answer=answer, actions=actions), profile)
    assert result.score is not None
    return result.score


@pytest.mark.parametrize("sid", sorted(RECORDED))
def test_the_recorded_answer_is_correct(scenarios: dict[str, Scenario], profile: Profile, sid: str) -> None:
    assert _score(scenarios, profile, sid, RECORDED[sid][1]) == 1.0


@pytest.mark.parametrize("rewrite", sorted(REWRITES))
@pytest.mark.parametrize("sid", sorted(RECORDED))
def test_a_rewritten_answer_keeps_its_score(
    scenarios: dict[str, Scenario], profile: Profile, sid: str, rewrite: str
) -> None:
    answer = RECORDED[sid][1]
    assert _score(scenarios, profile, sid, REWRITES[rewrite](answer)) == _score(
        scenarios, profile, sid, answer
    )


def _parrot(scenario: Scenario) -> tuple[list[ToolAction], str]:
    """Every declared object read back verbatim as tool output, and an answer repeating it line by line."""
    actions, said = [], []
    for state in scenario.preconditions.environment.state:
        data = state.model_dump(mode="json", by_alias=True, exclude_none=True)
        actions.append(ToolAction(tool="kubectl", arguments=["get", state.resource], result=json.dumps(data)))
        _words(data, said)
    return actions, "Here is what I found:\n" + "\n".join(dict.fromkeys(said))


LAZY = (
    "I had a look. Something seems off with the service; it could be configuration or resources. You may "
    "want to check it and restart it if it keeps happening."
)


@pytest.mark.parametrize("rewrite", sorted(REWRITES))
@pytest.mark.parametrize("sid", sorted(RECORDED))
def test_quoting_or_saying_nothing_stays_low_in_any_spelling(
    scenarios: dict[str, Scenario], profile: Profile, sid: str, rewrite: str
) -> None:
    actions, parrot = _parrot(scenarios[sid])
    assert _score(scenarios, profile, sid, REWRITES[rewrite](parrot), actions=actions) <= 0.3
    assert _score(scenarios, profile, sid, REWRITES[rewrite](LAZY)) <= 0.2
