"""The state of one evaluation run in memory, and how its parts are named."""

from __future__ import annotations

from dataclasses import dataclass, field

from oasis_operator.environments.stimuli import stimulus_plan
from oasis_operator.evaluation.repetitions import RunBook
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.models.crd import EvaluationRef, OASISEvaluationSpec, ScenarioRow
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.status.writer import StatusWriter


@dataclass
class RunState:
    """One evaluation run: its owner reference, frozen spec and scenarios, status writer and results."""

    owner: EvaluationRef
    spec: OASISEvaluationSpec
    scenarios: list[Scenario]
    writer: StatusWriter
    results: dict[str, ScenarioResult] = field(default_factory=dict)
    # Each scenario's stimulus plan: from planning, or built once on first use after a resume.
    plans: dict[str, StimulusPlan] = field(default_factory=dict)
    # spec.repetitions > 1: the runs over so far of scenarios not yet combined (evaluation.repetitions)
    book: RunBook = field(init=False)

    def __post_init__(self) -> None:
        self.book = RunBook(self.spec.repetitions)

    def plan_of(self, scenario: Scenario) -> StimulusPlan:
        """The scenario's stimulus plan, built at most once per run in this process."""
        if scenario.id not in self.plans:
            self.plans[scenario.id] = stimulus_plan(scenario)
        return self.plans[scenario.id]

    @property
    def rows(self) -> list[ScenarioRow]:
        """The status rows as they stand (change them through the writer)."""
        return self.writer.rows


def reference(run: RunState) -> str:
    """How sandboxes name their evaluation (namespace/name)."""
    return run.owner.key


def set_name(index: int, run: int | None = None) -> str:
    """The document set of the scenario at `index`, or of its run `run` when it runs more than once."""
    return f"scenario-{index:02d}" + (f"-run-{run:02d}" if run is not None else "")
