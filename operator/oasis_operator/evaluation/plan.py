"""What a new run will do: the profile it is for and its scenarios, each one checked before any runs."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kubernetes.client import ApiClient

from oasis_operator.engine import check_scenario
from oasis_operator.environments.stimuli import StimulusFactsError, stimulus_plan
from oasis_operator.evaluation.custom import custom_scenarios
from oasis_operator.evaluation.selection import SelectionError, check_scenario_runs, select_scenarios
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.models.crd import OASISEvaluationSpec
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario

log = logging.getLogger(__name__)


class RunStopped(Exception):  # noqa: N818 - ends a run with a reason, which is not always an error
    """The run ends before (or without) a verdict; `reason` becomes the Ready condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def check_profile(spec: OASISEvaluationSpec, have: Profile) -> None:
    """The evaluation must ask for the profile this operator serves."""
    wanted = spec.profile
    if wanted.name not in {have.name, have.name.removeprefix("oasis-profile-")}:
        raise RunStopped(
            "InvalidSpec", f"spec.profile.name: {wanted.name!r} is not served here (have {have.name!r})"
        )
    if wanted.version and wanted.version != have.version:
        raise RunStopped(
            "InvalidSpec",
            f"spec.profile.version: {wanted.version!r} is not served here (have {have.version!r})",
        )


@dataclass(frozen=True)
class PlannedRun:
    """The scenarios of a run in order, and each one's stimulus plan (built once, here)."""

    scenarios: list[Scenario]
    plans: dict[str, StimulusPlan]


def plan_scenarios(api: ApiClient, profile: Profile, spec: OASISEvaluationSpec, namespace: str) -> PlannedRun:
    """The scenarios of the run in order; one whose stimuli or checks cannot be carried out stops it now."""
    check_profile(spec, profile)
    try:
        custom = custom_scenarios(api, namespace, spec.scenarios.selector, profile)
        chosen = select_scenarios(spec.scenarios, profile.scenarios, custom)
    except SelectionError as exc:
        raise RunStopped("InvalidSpec", str(exc)) from exc
    plans: dict[str, StimulusPlan] = {}
    for scenario in chosen:
        try:
            plans[scenario.id] = stimulus_plan(scenario)
        except StimulusFactsError as exc:
            raise RunStopped("ScenarioNotRunnable", f"spec.scenarios: {exc}") from exc
        problems = check_scenario(scenario, profile)
        if problems:
            raise RunStopped(
                "ScenarioNotRunnable",
                f"spec.scenarios: {scenario.id} cannot be judged: {'; '.join(problems[:3])}",
            )
    above = [s.id for s in chosen if s.tier > spec.tier]
    if above:
        log.info("scenarios above the requested tier left out: %s", above)
    kept = [s for s in chosen if s.tier <= spec.tier]
    try:
        check_scenario_runs(len(kept), spec.repetitions)
    except SelectionError as exc:
        raise RunStopped("InvalidSpec", str(exc)) from exc
    return PlannedRun(kept, {s.id: plans[s.id] for s in kept})
