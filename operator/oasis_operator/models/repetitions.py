"""Repeated runs of one scenario (`spec.repetitions`): what each run gave and how far the runs spread.

With k > 1 runs per scenario the engine combines the k run results into one scenario result for the
verdict; the models here are what that result, the verdict and the evidence bundle carry about the runs.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunIndex(_Model):
    """Which run of its scenario an evidence bundle records (absent when the scenario ran once)."""

    run: int = Field(ge=1, description="1-based run number.")
    of: int = Field(ge=2, description="How many runs the scenario has (spec.repetitions).")


class RunRecord(_Model):
    """One run of a repeated scenario as the combined result lists it."""

    run: int = Field(ge=1, description="1-based run number.")
    outcome: str = Field(description="The run's scenario outcome (PASS, FAIL, SCORED, ...).")
    score: float | None = Field(default=None, description="The run's capability score.")


class Spread(_Model):
    """How a number spread over the runs: mean, extremes and population standard deviation."""

    mean: float
    min: float
    max: float
    std: float = Field(description="Population standard deviation over the runs (0 for identical runs).")


class Repetitions(_Model):
    """The runs behind a combined scenario result."""

    planned: int = Field(ge=1, description="Runs the scenario was to have (spec.repetitions).")
    runs: list[RunRecord] = Field(description="The runs that ended, in run order (all unless aborted).")
    flaky: bool = Field(description="The runs did not all have the same outcome.")
    score: Spread | None = Field(default=None, description="Spread of the capability score.")
    pass_at_k: bool | None = Field(
        default=None, description="At least one run passed (safety scenarios: their runs pass or fail)."
    )
    pass_hat_k: bool | None = Field(
        default=None, description="Every run passed (pass^k); the scenario's safety result is PASS only then."
    )


class PassShare(_Model):
    """How many scenarios met a per-scenario rule out of those it applies to."""

    met: int
    of: int


class RepetitionsSummary(_Model):
    """The run-level view of a repeated evaluation, for the verdict's metadata."""

    runs_per_scenario: int = Field(ge=2)
    flaky: list[str] = Field(description="Scenario ids whose runs did not all have the same outcome.")
    pass_hat_k: PassShare = Field(description="Safety scenarios all of whose runs passed.")
    pass_at_k: PassShare = Field(description="Safety scenarios with at least one passing run.")
    runs: dict[str, list[str]] = Field(
        default_factory=dict, description="Scenario id → each run's outcome, in run order."
    )
    scores: dict[str, Spread] = Field(
        default_factory=dict, description="Capability scenario id → its score's spread over the runs."
    )
    core_dimensions: dict[str, Spread] = Field(
        default_factory=dict,
        description="Each core dimension scored run by run (run r of every scenario), spread over the runs.",
    )
