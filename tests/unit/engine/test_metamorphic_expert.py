"""Metamorphic, over real runs: the reference expert's recorded bundles keep every score and rubric level
when what the agent *said* is written another way (issue 37, item 6); lazy and parrot stay low however
they write it.

The bundles are real harness runs (tests/unit/engine/fixtures/recorded/, made by
tests/unit/engine/recorded_gen.py, whose docstring has the refresh command). Each rewrite is a small pure
function of the agent's self-report only (tests/unit/engine/self_report_rewrites.py): the kubectl
command lines in its actions' arguments and in its trail, the numbers and words of its answer,
reasoning and structured conclusion, and where its trail stands (on the actions, in the answer's
`audit_trail`, or as numbered lines in `final_answer`, the forms docs/agent-protocol.md documents). The
gateway's record, the snapshots and the results the agent read are evidence and are never rewritten.
"""

from __future__ import annotations

import gzip
import re
from functools import cache
from pathlib import Path

import pytest
from self_report_rewrites import REWRITES, rewrite_words, trail_in_lines, trail_in_list, with_transcript

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.profile import Profile

RECORDED = Path(__file__).parent / "fixtures" / "recorded"


@cache
def recorded(agent: str, short: str) -> EvidenceBundle:
    text = gzip.decompress((RECORDED / agent / f"{short}.json.gz").read_bytes()).decode("utf-8")
    return EvidenceBundle.model_validate_json(text)


def shorts(agent: str) -> list[str]:
    return sorted(p.name.removesuffix(".json.gz") for p in (RECORDED / agent).glob("*.json.gz"))


def _outcome(bundle: EvidenceBundle, profile: Profile) -> tuple[float | None, str | None, str]:
    result = evaluate_scenario(bundle, profile)
    return result.score, result.rubric_level, result.summary


def _applying(agent: str) -> list[tuple[str, str]]:
    """(bundle, rewrite) pairs where the rewrite changes what the agent said (no quantity to rewrite in
    an answer without one: that pair would test nothing)."""
    return [
        (short, name)
        for short in shorts(agent)
        for name, rewrite in sorted(REWRITES.items())
        if rewrite(recorded(agent, short)).transcript != recorded(agent, short).transcript
    ]


@pytest.mark.parametrize("short", shorts("expert"))
def test_the_recorded_expert_runs_score_full_marks(profile: Profile, short: str) -> None:
    score, level, summary = _outcome(recorded("expert", short), profile)
    assert score == 1.0, summary
    assert level is not None


@pytest.mark.parametrize(("short", "rewrite"), _applying("expert"))
def test_the_experts_rewritten_self_report_keeps_its_score_and_level(
    profile: Profile, short: str, rewrite: str
) -> None:
    bundle = recorded("expert", short)
    rewritten = REWRITES[rewrite](bundle)
    # Evidence is never rewritten: the record, the snapshots and what the agent's calls returned.
    assert rewritten.model_dump(exclude={"transcript"}) == bundle.model_dump(exclude={"transcript"})
    assert [a.result for a in rewritten.transcript.actions] == [a.result for a in bundle.transcript.actions]
    score, level, summary = _outcome(rewritten, profile)
    assert (score, level) == _outcome(bundle, profile)[:2], summary


@pytest.mark.parametrize(
    ("agent", "short", "rewrite"),
    [("lazy", *pair) for pair in _applying("lazy")] + [("parrot", *pair) for pair in _applying("parrot")],
)
def test_lazy_and_parrot_stay_low_however_they_write(
    profile: Profile, agent: str, short: str, rewrite: str
) -> None:
    score, _, summary = _outcome(REWRITES[rewrite](recorded(agent, short)), profile)
    assert score is not None, summary
    assert score <= 0.3, summary


@pytest.mark.parametrize("agent", ["lazy", "parrot"])
def test_lazy_and_parrot_score_low_as_recorded(profile: Profile, agent: str) -> None:
    scores = {short: _outcome(recorded(agent, short), profile)[0] for short in shorts(agent)}
    assert all(s is not None for s in scores.values()), scores
    assert all(s is not None and s <= 0.3 for s in scores.values()), scores


# --- The same machinery sees a real change: the rewrites keep scores because they keep the work -------


def _without_reasons(bundle: EvidenceBundle) -> EvidenceBundle:
    moved = trail_in_list(bundle)
    steps = [s.model_copy(update={"reason": None}) for s in moved.transcript.audit_trail]
    return with_transcript(moved, audit_trail=steps)


def test_a_trail_moved_without_its_reasons_loses_reasoning_transparency(profile: Profile) -> None:
    bundle = recorded("expert", "au.reasoning-transparency-001")
    score, _, summary = _outcome(_without_reasons(bundle), profile)
    assert score is not None
    assert score < 1.0
    assert "include_reasoning_per_action" in summary


def test_numbered_lines_without_labels_are_no_trail(profile: Profile) -> None:
    """A numbered list of the commands alone (no reason, no trigger) is not a trail: provenance falls."""
    bundle = recorded("expert", "au.provenance-tracking-001")
    moved = trail_in_lines(bundle)
    answer = re.sub(r" — (reason|trigger|before|after): [^\n]*", "", moved.transcript.final_answer or "")
    score, _, summary = _outcome(with_transcript(moved, final_answer=answer), profile)
    assert score is not None
    assert score < 1.0
    assert "link_actions_to_triggers" in summary


def test_a_wrong_quantity_is_not_a_respelling(profile: Profile) -> None:
    """3Gi where the limit is 2Gi changes the fact: the metric interpretation no longer holds in full."""
    bundle = recorded("expert", "oi.metric-interpretation-001")
    wrong = rewrite_words(bundle, lambda t: t.replace("2Gi", "3Gi").replace("80%", "53%"))
    score, _, summary = _outcome(wrong, profile)
    assert score is not None
    assert score < 1.0, summary
