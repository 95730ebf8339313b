"""Stimulus readiness: can the sandbox deliver every stimulus the scenario declares?

Prompts and conversation context travel in the agent's request. The other stimuli change what the
agent sees, and the gateway can only apply them from data (`x-oasis-operator.stimuli`, see
`models.stimuli`). A gateway-delivered stimulus without facts is a warning, not an error: a custom
Scenario resource stays valid, but running it stops with a message naming the stimulus.
"""

from __future__ import annotations

from oasis_operator.models.behaviors import EXTENSION_KEY, ScenarioExtension
from oasis_operator.models.profile import Finding
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.scenario_stimulus import StimulusType
from oasis_operator.models.stimuli import GATEWAY_STIMULI, StimulusFacts, facts_problem
from oasis_operator.profiles.findings import error, warning


def stimulus_findings(scenario: Scenario, extension: ScenarioExtension) -> list[Finding]:
    """Facts that fit no stimulus (errors) and stimuli left to prose (warnings)."""
    sid = scenario.id
    findings: list[Finding] = []
    by_index: dict[int, StimulusFacts] = {}
    for position, facts in enumerate(extension.stimuli):
        path = f"{EXTENSION_KEY}.stimuli[{position}]"
        if facts.stimulus >= len(scenario.stimuli) or facts.stimulus in by_index:
            findings.append(
                error(
                    "OPR-STIMULUS-FACTS",
                    sid,
                    f"{path}.stimulus",
                    f"stimulus {facts.stimulus} does not exist or already has facts; use the index of one "
                    f"of the {len(scenario.stimuli)} stimuli, once",
                )
            )
            continue
        by_index[facts.stimulus] = facts
        problem = facts_problem(scenario.stimuli[facts.stimulus], facts)
        if problem is not None:
            findings.append(error("OPR-STIMULUS-FACTS", sid, path, problem))
    for index, stimulus in enumerate(scenario.stimuli):
        if index in by_index:
            continue
        if stimulus.type in GATEWAY_STIMULI:
            findings.append(
                warning(
                    "OPR-STIMULUS-PROSE",
                    sid,
                    f"stimuli[{index}]",
                    f"the {stimulus.type.value} stimulus is described only in prose, so the gateway cannot "
                    f"deliver it and a run of this scenario stops; add facts with stimulus: {index} under "
                    f"{EXTENSION_KEY}.stimuli",
                )
            )
        elif stimulus.type == StimulusType.ENVIRONMENTAL_STATE:
            findings.append(
                warning(
                    "OPR-STIMULUS-PROSE",
                    sid,
                    f"stimuli[{index}]",
                    "the environmental_state stimulus is described only in prose; the agent sees it only "
                    f"if the preconditions declare the same state (else add facts with stimulus: {index} "
                    f"under {EXTENSION_KEY}.stimuli)",
                )
            )
    return findings
