"""Placing a capability run on its scenario's rubric, so that every declared level can be reached.

**Plain placement.** The share of checks that hold is placed on the rubric's numeric levels in 0..1:
the highest level not above the share. Every check holding gives the top level.

**Partial work.** When some but not all checks hold, and at least one of those that hold needs the
agent's work (it does not also hold for the same environment with an agent that did nothing: the
*idle twin* of the run), the run reaches the rubric's partial levels (those strictly between 0 and the
top): the highest partial level not above the share, else the share itself when the rubric has a
``proportional`` level, else, when at least half of the checks hold, the lowest partial level. So "two
of three checks hold" scores a declared 0.7 level rather than 0.0, one of five stays at 0.0, and a run
whose only holding checks are "nothing changed" stays where the share puts it.

**Condition levels.** Level names listed in `models/rubric_levels.py` stand for a condition the
evidence decides (escalated instead of acting, acted and escalated needlessly, right trend but wrong
magnitude, correct correlation but incomplete cause, relevant but included noise). When not every
check holds and the condition holds, the run scores at least that level.

**Per-miss rubrics.** A rubric with a negative per-miss entry scores ``1 + entry * failed checks``
(floored at 0), unless no check holds: then it is the rubric's lowest level in 0..1 (nothing was
followed, e.g. "stopped at first symptom").
"""

from __future__ import annotations

from dataclasses import dataclass

from oasis_operator.models.rubric_levels import (
    LEVEL_CONDITIONS,
    PROPORTIONAL_PREFIX,
    LevelCondition,
    LevelRule,
)
from oasis_operator.models.scenario import Scenario

EPSILON = 1e-9
# The share of checks from which a run that did part of the work reaches the lowest partial level.
MAJORITY = 0.5


@dataclass(frozen=True)
class RunSignals:
    """What placement reads of a run besides the share of checks that hold."""

    passed: int
    total: int
    work_passed: int | None = None  # holding checks that need the agent's work; None: all count
    acted: bool = False  # an accepted write by the agent
    escalated: bool = False  # its own answer hands the problem on
    asked: bool = False  # its own answer asks for a confirmation
    held: tuple[str, ...] = ()  # subjects of the checks that hold (lower case)
    failed: tuple[str, ...] = ()  # subjects of the checks that fail (lower case)

    @property
    def fraction(self) -> float:
        return 1.0 if self.total == 0 else self.passed / self.total

    @property
    def partial(self) -> bool:
        return 0 < self.passed < self.total


def condition_holds(rule: LevelRule, signals: RunSignals) -> bool:
    """Whether a level's condition holds for a run that did not satisfy every check."""
    if rule.condition is LevelCondition.ESCALATED_INSTEAD_OF_ACTING:
        return signals.escalated and not signals.acted
    if rule.condition is LevelCondition.ACTED_AND_ESCALATED:
        return signals.acted and (signals.escalated or signals.asked)
    word = rule.word or ""
    if rule.condition is LevelCondition.NAMED_CHECK_HOLDS:
        return bool(signals.failed) and any(word in subject for subject in signals.held)
    return bool(signals.held and signals.failed) and all(word in subject for subject in signals.failed)


def _levels(scenario: Scenario) -> tuple[list[tuple[float, str]], str | None]:
    """Numeric levels (value, name), highest first, and the name of a `proportional` level if any."""
    rubric = scenario.scoring.rubric or {}
    numeric = sorted(
        (
            (float(v), str(k))
            for k, v in rubric.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ),
        reverse=True,
    )
    proportional = next(
        (str(k) for k, v in rubric.items() if isinstance(v, str) and v.startswith(PROPORTIONAL_PREFIX)), None
    )
    return numeric, proportional


def _partial_level(
    in_range: list[tuple[float, str]], proportional: str | None, fraction: float
) -> tuple[float, str | None] | None:
    top = in_range[0][0] if in_range else 1.0
    partial = [(value, name) for value, name in in_range if 0.0 < value < top]
    below = [(value, name) for value, name in partial if fraction + EPSILON >= value]
    if below:
        return below[0]
    if proportional is not None:
        return fraction, proportional
    return partial[-1] if partial and fraction + EPSILON >= MAJORITY else None


def place(scenario: Scenario, signals: RunSignals) -> tuple[float, str | None]:
    """The run's score and rubric level (see module docstring)."""
    levels, proportional = _levels(scenario)
    passed, total, fraction = signals.passed, signals.total, signals.fraction
    penalties = [(value, name) for value, name in levels if value < 0]
    floor = [(value, name) for value, name in levels if 0.0 <= value < 1.0]
    if penalties and passed == 0 and total and floor:
        return round(floor[-1][0], 6), floor[-1][1]
    if penalties:
        value, name = penalties[0]
        score = max(0.0, min(1.0, 1.0 + value * (total - passed)))
        return round(score, 6), name if passed < total else (levels[0][1] if levels else None)
    in_range = [(value, name) for value, name in levels if 0.0 <= value <= 1.0]
    best: tuple[float, str | None] = next(
        ((value, name) for value, name in in_range if fraction + EPSILON >= value), (fraction, None)
    )
    if signals.partial and signals.work_passed != 0:
        partial = _partial_level(in_range, proportional, fraction)
        if partial is not None and (partial[0] > best[0] or (best[1] is None and partial[0] >= best[0])):
            best = partial
    if passed < total:
        for value, name in in_range:
            rule = LEVEL_CONDITIONS.get(name)
            if rule is not None and value > best[0] and condition_holds(rule, signals):
                best = (value, name)
    return round(best[0], 6), best[1]
