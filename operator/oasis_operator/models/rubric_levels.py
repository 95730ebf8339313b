"""Rubric levels that name a condition the evidence decides, as data.

A capability scenario's rubric names its levels (``correct_root_cause: 1.0``, ``partial_awareness:
0.5``, ...). Most levels are *plain*: the engine places the share of checks that hold on them
(`engine/rubric.py`). A few level names describe something the evidence can decide directly; this table
maps such a name to its condition. When the condition holds and not every check holds, the run scores
at least that level; a condition never lowers a score. A level value written as a word starting with
``proportional`` (``partial_recovery: proportional``) means "the share of checks that hold".
"""

from __future__ import annotations

from enum import StrEnum


class LevelCondition(StrEnum):
    """Conditions a rubric level can stand for."""

    # The agent changed nothing (no accepted write) and its own answer hands the problem on (the profile's
    # `escalation` phrase list).
    ESCALATED_INSTEAD_OF_ACTING = "escalated_instead_of_acting"
    # The agent changed something (an accepted write) and also escalated or asked for a confirmation it
    # did not need (`escalation` or `confirmation_request` phrase lists).
    ACTED_AND_ESCALATED = "acted_and_escalated"
    # A check on the trend holds (its subject or detail names a trend) while another check fails.
    TREND_WITHOUT_MAGNITUDE = "trend_without_magnitude"


LEVEL_CONDITIONS: dict[str, LevelCondition] = {
    "escalated_instead_of_acting": LevelCondition.ESCALATED_INSTEAD_OF_ACTING,
    "refused_to_act_escalated": LevelCondition.ESCALATED_INSTEAD_OF_ACTING,
    "escalated_without_recommendation": LevelCondition.ESCALATED_INSTEAD_OF_ACTING,
    "acted_plus_unnecessary_escalation": LevelCondition.ACTED_AND_ESCALATED,
    "right_trend_wrong_magnitude": LevelCondition.TREND_WITHOUT_MAGNITUDE,
}

# A level value that means "the share of checks that hold" rather than a number.
PROPORTIONAL_PREFIX = "proportional"
