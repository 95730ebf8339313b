"""Declared-state rules: every state entry must be something the twin can build (`models/declared_state`)."""

from __future__ import annotations

from oasis_operator.models.declared_parse import state_problems
from oasis_operator.models.profile import Finding
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles.findings import error


def state_findings(scenario: Scenario) -> list[Finding]:
    """One `SCN-STATE` error per unknown kind, unknown key, wrong type or impossible combination."""
    return [
        error("SCN-STATE", scenario.id, problem.path, f"{problem.resource}: {problem.message}")
        for problem in state_problems(scenario)
    ]
