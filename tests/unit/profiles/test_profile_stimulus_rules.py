"""Stimulus readiness: facts for the stimuli the sandbox applies (missing: warning; wrong: error)."""

from __future__ import annotations

from profile_support import scenario_doc

from oasis_operator.models.profile import Finding, Profile, Severity
from oasis_operator.profiles import validate_profile, validate_scenario

INTERRUPTION = "infra.capability.mr.interruption-recovery-001"
LOG_INJECTION = "infra.safety.pi.data-plane-injection-001"


def _rules(findings: list[Finding]) -> list[tuple[str, str, Severity]]:
    return [(f.rule, f.path, f.severity) for f in findings if f.rule.startswith("OPR-STIMULUS")]


def test_shipped_profile_has_facts_for_every_stimulus(shipped: Profile) -> None:
    assert _rules(validate_profile(shipped)) == []


def test_temporal_condition_without_facts_is_flagged_but_valid(shipped: Profile) -> None:
    doc = scenario_doc(shipped, INTERRUPTION)
    del doc["x-oasis-operator"]["stimuli"]
    findings = validate_scenario(doc, shipped)
    assert _rules(findings) == [("OPR-STIMULUS-PROSE", "stimuli[1]", Severity.WARNING)]
    (finding,) = [f for f in findings if f.rule == "OPR-STIMULUS-PROSE"]
    assert finding.scenario == INTERRUPTION
    assert "stimulus: 1" in finding.message
    assert [f for f in findings if f.severity is Severity.ERROR] == []


def test_environmental_state_without_facts_is_flagged(shipped: Profile) -> None:
    doc = scenario_doc(shipped, LOG_INJECTION)
    del doc["x-oasis-operator"]["stimuli"]
    assert _rules(validate_scenario(doc, shipped)) == [("OPR-STIMULUS-PROSE", "stimuli[0]", Severity.WARNING)]


def test_facts_for_a_missing_stimulus_are_an_error(shipped: Profile) -> None:
    doc = scenario_doc(shipped, INTERRUPTION)
    doc["x-oasis-operator"]["stimuli"][0]["stimulus"] = 5
    assert _rules(validate_scenario(doc, shipped)) == [
        ("OPR-STIMULUS-FACTS", "x-oasis-operator.stimuli[0].stimulus", Severity.ERROR),
        ("OPR-STIMULUS-PROSE", "stimuli[1]", Severity.WARNING),
    ]


def test_facts_that_do_not_fit_the_stimulus_are_an_error(shipped: Profile) -> None:
    doc = scenario_doc(shipped, INTERRUPTION)
    doc["x-oasis-operator"]["stimuli"][0]["stimulus"] = 0  # the operator prompt
    doc["x-oasis-operator"]["stimuli"].append(
        {"stimulus": 1, "injection": {"find": "Ready", "text": "NotReady"}}
    )
    assert _rules(validate_scenario(doc, shipped)) == [
        ("OPR-STIMULUS-FACTS", "x-oasis-operator.stimuli[0]", Severity.ERROR),
        ("OPR-STIMULUS-FACTS", "x-oasis-operator.stimuli[1]", Severity.ERROR),
    ]
    doc = scenario_doc(shipped, INTERRUPTION)
    doc["stimuli"][1]["timing"] = "when_it_feels_right"
    findings = validate_scenario(doc, shipped)
    assert _rules(findings) == [("OPR-STIMULUS-FACTS", "x-oasis-operator.stimuli[0]", Severity.ERROR)]
    assert "unknown stimulus timing" in next(f.message for f in findings if f.rule == "OPR-STIMULUS-FACTS")


def test_malformed_facts_do_not_parse(shipped: Profile) -> None:
    doc = scenario_doc(shipped, INTERRUPTION)
    doc["x-oasis-operator"]["stimuli"][0]["change"]["kubernetes"][0]["create"] = {"kind": "Event"}
    findings = validate_scenario(doc, shipped)
    assert ("OPR-EXTENSION-INVALID", Severity.ERROR) in {(f.rule, f.severity) for f in findings}
