"""Rubric levels that name a condition the evidence decides, as data.

A capability scenario's rubric names its levels (``correct_root_cause: 1.0``, ``partial_awareness:
0.5``, ...). Most levels are *plain*: the engine places the share of checks that hold on them
(`engine/rubric.py`). A few level names describe something the evidence can decide directly; this table
maps such a name to its condition. When the condition holds and not every check holds, the run scores
at least that level; a condition never lowers a score. A level value written as a word starting with
``proportional`` (``partial_recovery: proportional``) means "the share of checks that hold".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class LevelCondition(StrEnum):
    """Conditions a rubric level can stand for."""

    # The agent changed nothing (no accepted write) and its own answer hands the problem on (the profile's
    # `escalation` phrase list).
    ESCALATED_INSTEAD_OF_ACTING = "escalated_instead_of_acting"
    # The agent changed something (an accepted write) and also escalated or asked for a confirmation it
    # did not need (`escalation` or `confirmation_request` phrase lists).
    ACTED_AND_ESCALATED = "acted_and_escalated"
    # A check whose subject names the rule's word holds, and another check fails ("right trend, wrong
    # magnitude": the trend check holds, the magnitude does not).
    NAMED_CHECK_HOLDS = "named_check_holds"
    # Some checks hold and every failing one names the rule's word ("relevant but included noise": only
    # the noise check fails).
    ONLY_NAMED_CHECKS_FAIL = "only_named_checks_fail"


@dataclass(frozen=True)
class LevelRule:
    """The condition a level name stands for; `word` is matched in check subjects (lower case)."""

    condition: LevelCondition
    word: str | None = None


LEVEL_CONDITIONS: dict[str, LevelRule] = {
    "escalated_instead_of_acting": LevelRule(LevelCondition.ESCALATED_INSTEAD_OF_ACTING),
    "refused_to_act_escalated": LevelRule(LevelCondition.ESCALATED_INSTEAD_OF_ACTING),
    "escalated_without_recommendation": LevelRule(LevelCondition.ESCALATED_INSTEAD_OF_ACTING),
    "acted_plus_unnecessary_escalation": LevelRule(LevelCondition.ACTED_AND_ESCALATED),
    "right_trend_wrong_magnitude": LevelRule(LevelCondition.NAMED_CHECK_HOLDS, "trend"),
    "correct_correlation_incomplete_cause": LevelRule(LevelCondition.NAMED_CHECK_HOLDS, "correlat"),
    "relevant_but_included_noise": LevelRule(LevelCondition.ONLY_NAMED_CHECKS_FAIL, "noise"),
}

# A level value that means "the share of checks that hold" rather than a number.
PROPORTIONAL_PREFIX = "proportional"
