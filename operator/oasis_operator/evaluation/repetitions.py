"""Bookkeeping of repeated scenario runs (`spec.repetitions` > 1) during one evaluation.

The unit of scheduling is one run of one scenario: every run is a fresh sandbox, and the runs of all
scenarios of a phase share `spec.parallelism`. Each run's result and bundle go to a document set of its
own (`run_state.set_name(index, run)`), and its letter to the scenario's status row (`runs`), so a
restarted operator knows which runs are over and runs only the others. Once every run of a scenario is
over, the engine combines them (`engine.repetitions.combine_runs`) into the scenario's one result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from oasis_operator.engine.repetitions import combine_runs
from oasis_operator.models.crd import ScenarioRow
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.repetitions import RunIndex
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.scenario import Classification
from oasis_operator.status import rows as status_rows
from oasis_operator.status.conditions import now_rfc3339

# (row index, run number); the run is None when every scenario runs once.
RunSlot = tuple[int, int | None]


@dataclass
class RunBook:
    """The runs of repeated scenarios that are over: their results and evidence sets."""

    repetitions: int
    results: dict[str, dict[int, ScenarioResult | None]] = field(default_factory=dict)
    evidence: dict[str, dict[int, str]] = field(default_factory=dict)

    def record(self, scenario: str, run: int, result: ScenarioResult | None, evidence: str) -> None:
        """One run is over (a run recorded again, after a restart, replaces the earlier record)."""
        self.results.setdefault(scenario, {})[run] = result
        self.evidence.setdefault(scenario, {})[run] = evidence

    def complete(self, scenario: str) -> bool:
        """Every run of the scenario is over."""
        return len(self.results.get(scenario, {})) >= self.repetitions

    def combined(self, scenario: str) -> ScenarioResult | None:
        """The scenario's result from the runs over so far (None: it cannot be judged)."""
        return combine_runs(self.results[scenario], self.repetitions)

    def evidence_of(self, scenario: str, result: ScenarioResult | None) -> str | None:
        """The evidence set of the run the combined result shows (its first run with that outcome)."""
        runs = self.results.get(scenario, {})
        for run in sorted(runs):
            found = runs[run]
            if result is None or (found is not None and found.outcome is result.outcome):
                return self.evidence[scenario].get(run)
        return None


def pending_runs(
    rows: Sequence[ScenarioRow], classification: Classification, repetitions: int
) -> list[RunSlot]:
    """The runs still to do in a phase, round by round (run 1 of every scenario, then run 2, ...), so
    the runs of one scenario are spread among the others under the run's parallelism."""
    open_rows = [
        (i, row)
        for i, row in enumerate(rows)
        if row.classification is classification and not status_rows.is_done(row)
    ]
    if repetitions == 1:
        return [(i, None) for i, _ in open_rows]
    return [
        (i, run)
        for run in range(1, repetitions + 1)
        for i, row in open_rows
        if (row.runs or "")[run - 1 : run] in ("", status_rows.NOT_RUN)
    ]


def tagged(bundle: EvidenceBundle, run: int | None, repetitions: int) -> EvidenceBundle:
    """The bundle with the run it records, so replay can combine the runs of its scenario."""
    if run is None:
        return bundle
    return bundle.model_copy(update={"repetition": RunIndex(run=run, of=repetitions)})


def finished_runs(row: ScenarioRow) -> list[int]:
    """The run numbers the row marks as over (for a resume)."""
    return [n for n, code in enumerate(row.runs or "", 1) if code != status_rows.NOT_RUN]


def first_start(row: ScenarioRow, run: int | None) -> str:
    """When the scenario started: now, or for a later run of a repeated scenario its first run's start."""
    return (row.startedAt if run is not None else None) or now_rfc3339()
