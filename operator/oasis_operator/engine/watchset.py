"""Which objects a scenario's run must watch: the targets of its checks that read the whole window.

Pure, from the scenario alone, so the runner can start the watches before the agent gets its
credentials. The same checks the engine judges with declare what they read (`Check.watches`): the
state-based negative verifications of the fixed table (`engine.prose`) and the invariant structured state
assertions (`engine.statecheck.WINDOW_CONDITIONS`). Entries the engine cannot read contribute nothing
here; the engine refuses them when it judges the run, so nothing passes for want of a watch.
"""

from __future__ import annotations

from oasis_operator.engine.checks import Check
from oasis_operator.engine.prose import UnrecognisedEntryError, negative_check
from oasis_operator.engine.statecheck import structured_state_check
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.window import WatchTarget


def watch_targets(scenario: Scenario) -> list[WatchTarget]:
    """The distinct objects to watch during the scenario's run, in scenario order (empty: none)."""
    checks: list[Check] = []
    verification = scenario.verification
    for text in verification.negative_verification:
        try:
            checks.append(negative_check(text, scenario))
        except UnrecognisedEntryError:
            continue
    for entry in verification.state_assertions:
        if entry.resource is None:
            continue
        try:
            checks.append(structured_state_check(entry, scenario))
        except UnrecognisedEntryError:
            continue
    merged: dict[tuple[str, str, str | None], WatchTarget] = {}
    for check in checks:
        for target in check.watches:
            key = (target.kind, target.name, target.namespace)
            known = merged.get(key)
            merged[key] = target if known is None or target.status else known
    return list(merged.values())
