"""A scenario run's evidence timeline (pure): the agent's recorded requests, the stimuli the gateway
applied, the watched states the deciding checks cite, and the checks that decided the result, in time
order.

Requests are the engine's own view of the agent's entries (both audit sources, paired once). A check is
placed at the latest request or watched state its evidence cites (`audit#<seq>`, `window … at <time>`:
a change made during the run, shown as a `state` event at its time), or at the end of the window when it
cites neither (a before/after comparison, an absence). The checks that decide are the failed ones when
any failed, else every check (each one holding is what the PASS rests on). The list is bounded: past
`MAX_REQUESTS` requests the rest are summarised in one event, so a flood cannot swell the report.
"""

from __future__ import annotations

import re

from oasis_operator.engine.window import STATE_REF
from oasis_operator.models.evidence import AuditEntry, EvidenceBundle
from oasis_operator.models.results import CheckResult, TimelineEvent

MAX_REQUESTS = 200
_CITED = re.compile(r"\baudit#(\d+)\b")
# Order of kinds at the same instant: what the agent did, what it was shown, what was decided.
_RANK = {"request": 0, "stimulus": 1, "state": 2, "check": 3}


def _request(entry: AuditEntry) -> TimelineEvent:
    target = entry.resource + (f"/{entry.name}" if entry.name else "")
    where = f" -n {entry.namespace}" if entry.namespace else ""
    sub = f" ({entry.subresource})" if entry.subresource else ""
    actor = "" if entry.actor.value == "agent" else f" [{entry.actor.value}]"
    return TimelineEvent(
        time=entry.time,
        kind="request",
        label=f"{entry.verb} {target}{sub}{where}{actor}",
        status=str(entry.response_code),
        ref=f"audit#{entry.seq}",
    )


def deciding_checks(checks: list[CheckResult]) -> list[CheckResult]:
    """The failed checks when any failed, else all of them."""
    failed = [c for c in checks if not c.passed]
    return failed or list(checks)


def build_timeline(
    bundle: EvidenceBundle, entries: list[AuditEntry], checks: list[CheckResult]
) -> list[TimelineEvent]:
    """The timeline of one run from its bundle, the agent's entries and the evaluated checks."""
    events = [_request(e) for e in entries[:MAX_REQUESTS]]
    if len(entries) > MAX_REQUESTS:
        rest = entries[MAX_REQUESTS:]
        events.append(
            TimelineEvent(time=rest[-1].time, kind="request", label=f"… {len(rest)} more requests", ref="")
        )
    times = {e.seq: e.time for e in entries}
    for stimulus in bundle.stimuli:
        label = f"{stimulus.trigger}: {' '.join(stimulus.detail.split())}".strip(": ")
        events.append(TimelineEvent(time=stimulus.time, kind="stimulus", label=label, ref=stimulus.stimulus))
    end = bundle.window.end or (entries[-1].time if entries else bundle.window.start)
    states: dict[str, TimelineEvent] = {}
    for check in deciding_checks(checks):
        cited = [int(n) for text in check.evidence for n in _CITED.findall(text) if int(n) in times]
        seen = [m for m in (STATE_REF.match(text) for text in check.evidence) if m is not None]
        for match in seen:
            states.setdefault(
                match.group(0),
                TimelineEvent(time=match["time"], kind="state", label=match["what"], ref="window"),
            )
        placed = [times[n] for n in cited] + [m["time"] for m in seen]
        events.append(
            TimelineEvent(
                time=max(placed) if placed else end,
                kind="check",
                label=f"{check.block}: {check.subject}",
                status="PASS" if check.passed else "FAIL",
                ref=f"{check.block}[{check.index}]",
            )
        )
    events.extend(states.values())
    return sorted(events, key=lambda e: (e.time, _RANK[e.kind]))
