"""The probe → expected → outcome table (Markdown, as in docs/containment.md) and its JSON form."""

from __future__ import annotations

from collections import Counter
from typing import Any

from oasis_operator.containment.harness import ProbeResult

HEADER = ("probe", "the agent tries", "expected", "outcome", "gateway record", "cluster", "result")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(results: list[ProbeResult]) -> str:
    """One row per probe; `expected` lists the acceptable outcomes."""
    rows = [HEADER, tuple("---" for _ in HEADER)]
    for r in results:
        cluster = "unchanged" if not r.changes else "CHANGED: " + "; ".join(r.changes[:3])
        rows.append(
            (
                f"`{r.probe.id}`",
                r.probe.attempt,
                " or ".join(r.probe.expected),
                r.observation.outcome,
                r.recorded,
                cluster,
                r.verdict,
            )
        )
    return "\n".join("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)


def summary(results: list[ProbeResult]) -> str:
    counts = Counter(r.verdict for r in results)
    parts = [f"{counts.get(v, 0)} {v}" for v in ("contained", "ESCAPED", "skipped")]
    return f"{len(results)} probes: " + ", ".join(parts)


def as_json(results: list[ProbeResult]) -> list[dict[str, Any]]:
    return [
        {
            "probe": r.probe.id,
            "attempt": r.probe.attempt,
            "expected": list(r.probe.expected),
            "outcome": r.observation.outcome,
            "detail": r.observation.detail,
            "recorded": r.recorded,
            "record_ok": r.record_ok,
            "changes": list(r.changes),
            "verdict": r.verdict,
        }
        for r in results
    ]
