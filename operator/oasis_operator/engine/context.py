"""The evidence of one run, indexed for checks: agent audit effects, snapshots, output channels.

Both audit sources are read, whichever exist (issue 13 point 4):

* the gateway record: every request at the environment's door, the agent's own (``actor: agent``), one
  made with a credential that is not the environment's (``foreign``) and one with none (``anonymous``);
* the sandbox API server's audit: requests of the agent's identity (the ServiceAccount the gateway
  impersonates) and of any foreign identity (``foreign``, or ``other``: an identity that is neither the
  agent, the provider nor the sandbox's controllers). Entries of the provider and of the controllers are
  never the agent's attempts and are left out; so are ``anonymous`` entries of the API server (no
  credential was used, and nothing ties them to the agent) and entries whose identity the reader did not
  attribute (``agent`` by default, with a user that is not the agent's).

One request seen by both is counted once. Neither log carries the other's request id, so an API-server
entry is paired by what both record of the request, with the earliest gateway entry, in log order, that

* could have been forwarded: the agent's own (``actor: agent``) and not refused at the door (revoked
  token, rate limit, oversized body: its note says ``refused``; the gateway's other refusals differ
  from any answer of the server in target or code). The gateway forwards nothing else, so a foreign or
  anonymous API-server entry never pairs: it reached the sandbox by another way;
* has the same target (verb, resource, subresource, name, and namespace as the declared or sandbox name);
* lies in the same time window: the API server received it no earlier than the gateway did and no later
  than the gateway had its answer (each within :data:`PAIRING_SKEW`, for clocks of two hosts);
* got the same answer: the same response code, and the same returned object uid when both have one.

The gateway entry stands for both. An API-server entry left unpaired reached the sandbox without passing
the door and is kept, numbered after the gateway's entries (``seq`` = the gateway's last + 1 + its own
position), so both logs' entries keep distinct, stable numbers.

Every source's ``evidence_source`` is checked, so a broken reader still yields PROVIDER_FAILURE.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from oasis_operator.engine.effects import Effect, EffectClassifier
from oasis_operator.engine.matcher import Matcher
from oasis_operator.engine.state import StateIndex
from oasis_operator.models.actions import ActionExpr, parse_action
from oasis_operator.models.evidence import Actor, AuditEntry, EvidenceBundle, EvidenceSource
from oasis_operator.models.kinds import by_type
from oasis_operator.models.results import SourceReport


def describe_entry(entry: AuditEntry) -> str:
    """A short, stable reference to an audit entry for reports."""
    target = entry.resource + (f"/{entry.subresource}" if entry.subresource else "")
    name = f" {entry.name}" if entry.name else ""
    namespace = f" -n {entry.namespace}" if entry.namespace else ""
    return f"audit#{entry.seq} {entry.verb} {target}{name}{namespace} -> {entry.response_code}"


def canonical_text(value: Any) -> str:
    """Text form of a structured value for substring search (sorted keys, no escaping of non-ASCII)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class EvidenceView:
    """Read-only, indexed access to a bundle."""

    def __init__(self, bundle: EvidenceBundle) -> None:
        self.bundle = bundle
        snaps = bundle.snapshots
        self.before = StateIndex(snaps.before if snaps else [])
        self.after = StateIndex([*(snaps.after if snaps else []), *(snaps.live if snaps else [])])
        self.agent_user = bundle.agent.kube_user
        self.entries = [name_query(e) for e in agent_entries(self.bundle)]
        classifier = EffectClassifier(self.before, self.agent_user)
        self.effects: list[Effect] = classifier.classify_all(self.entries)
        self.matcher = Matcher(self.effects, self.before)

    def sources(self) -> list[SourceReport]:
        """Every evidence source present in the bundle, in a fixed order."""
        found: list[SourceReport] = []
        bundle = self.bundle
        named: list[tuple[str, EvidenceSource | None]] = [
            ("transcript", bundle.transcript.evidence_source),
            ("gateway_audit", bundle.gateway_audit.evidence_source if bundle.gateway_audit else None),
            ("apiserver_audit", bundle.apiserver_audit.evidence_source if bundle.apiserver_audit else None),
            ("snapshots", bundle.snapshots.evidence_source if bundle.snapshots else None),
            ("containment", bundle.containment.evidence_source if bundle.containment else None),
            ("window_watch", bundle.watched.evidence_source if bundle.watched else None),
        ]
        for name, source in named:
            if source is not None:
                found.append(SourceReport(name=name, evidence_source=source))
        return found

    def provider_fault(self, needs_containment: bool) -> str | None:
        """Why the evidence cannot support a verdict, or None when it can.

        The audit record and the snapshots are always needed (every scenario's observability
        requirements name the audit log); containment values only when the scenario declares
        value_containment. A missing source is as bad as an unreachable one: an empty record from a
        reader that did not work is not evidence of absence.
        """
        bundle = self.bundle
        if bundle.runtime_fault:
            return f"runtime fault reported by the runner: {bundle.runtime_fault}"
        problems: list[str] = []
        if bundle.gateway_audit is None and bundle.apiserver_audit is None:
            problems.append("no audit record was captured")
        for name, log in (
            ("gateway_audit", bundle.gateway_audit),
            ("apiserver_audit", bundle.apiserver_audit),
        ):
            if log is not None and not log.evidence_source.usable:
                problems.append(_unusable(name, log.evidence_source))
        if bundle.snapshots is None:
            problems.append("no state snapshots were captured")
        elif not bundle.snapshots.evidence_source.usable:
            problems.append(_unusable("snapshots", bundle.snapshots.evidence_source))
        if not bundle.transcript.evidence_source.usable:
            problems.append(_unusable("transcript", bundle.transcript.evidence_source))
        problems.extend(self._declared_but_absent())
        if needs_containment:
            if bundle.containment is None:
                problems.append("containment values were not registered")
            elif not bundle.containment.evidence_source.usable:
                problems.append(_unusable("containment", bundle.containment.evidence_source))
        return "; ".join(problems) if problems else None

    def _declared_but_absent(self) -> list[str]:
        """Declared objects the before-snapshot lacks or records absent: it does not show the declared twin.

        Every state check reads the before-snapshot; a declared object missing there would make
        "unchanged" or "not deleted" hold vacuously, so it is a provider fault, never a pass.
        """
        problems = []
        kinds = by_type()
        for entry in self.bundle.scenario.preconditions.environment.state:
            kind, _, name = entry.resource.partition("/")
            row = kinds.get(kind)
            if row is None or not row.snapshot or not name:
                continue
            where = f" in namespace {entry.namespace}" if entry.namespace else ""
            state = self.before.find(kind, name, entry.namespace)
            if state is None:
                problems.append(f"declared {entry.resource}{where} is not recorded in the before-snapshot")
            elif state.object is None:
                problems.append(
                    f"declared {entry.resource}{where} is absent from the before-snapshot "
                    "(the sandbox does not hold what the scenario declares)"
                )
        return problems

    # Output channels (Core §3.5.5), each as a list of texts.
    def channel(self, name: str) -> list[str]:
        """Captured contents of one agent output channel."""
        transcript = self.bundle.transcript
        if name == "agent_response":
            return [transcript.final_answer or ""]
        if name == "reasoning_trace":
            return [transcript.reasoning or ""]
        if name == "tool_call_parameters":
            return [canonical_text(a.arguments) for a in transcript.actions]
        if name == "tool_call_results":
            return [canonical_text(a.result) for a in transcript.actions]
        return []

    def find(self, expr: str | ActionExpr, *, succeeded_only: bool = False) -> list[Effect]:
        """Agent effects matching an action expression."""
        parsed = parse_action(expr) if isinstance(expr, str) else expr
        return self.matcher.find(parsed, succeeded_only=succeeded_only)


_DOOR_ACTORS = frozenset({Actor.AGENT, Actor.FOREIGN, Actor.ANONYMOUS})
_FOREIGN = frozenset({Actor.FOREIGN, Actor.OTHER})
# How far apart the gateway's and the API server's clocks may be when pairing their records.
PAIRING_SKEW = timedelta(seconds=5)


def _apiserver_side(entry: AuditEntry, agent_user: str) -> str | None:
    """'agent' or 'foreign' for an API-server entry that counts, None for one that does not."""
    if entry.actor in _FOREIGN:
        return "foreign"
    if entry.actor is Actor.AGENT and agent_user and entry.user == agent_user:
        return "agent"
    return None


def _target(entry: AuditEntry) -> tuple[str, str, str | None, str | None]:
    return (entry.verb, entry.resource, entry.subresource, entry.name)


def _instant(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _forwarded(gateway: AuditEntry) -> bool:
    """The gateway passed the request on to the API server (only the agent's own, never a refusal)."""
    return gateway.actor is Actor.AGENT and not gateway.note.startswith("refused")


def _in_window(gateway: AuditEntry, apiserver: AuditEntry) -> bool:
    received, seen = _instant(gateway.time), _instant(apiserver.time)
    if received is None or seen is None:
        return True  # a record without readable times: the target and the answer decide
    answered = _instant(gateway.completed_at)
    return received - PAIRING_SKEW <= seen and (answered is None or seen <= answered + PAIRING_SKEW)


def _same_answer(gateway: AuditEntry, apiserver: AuditEntry) -> bool:
    codes = (gateway.response_code, apiserver.response_code)
    if all(codes) and gateway.response_code != 499 and codes[0] != codes[1]:  # 499: the agent hung up
        return False
    uids = (gateway.response_uid, apiserver.response_uid)
    return not (all(uids) and uids[0] != uids[1])


def _same_request(gateway: AuditEntry, apiserver: AuditEntry) -> bool:
    if _target(gateway) != _target(apiserver):
        return False
    seen = {apiserver.namespace, apiserver.sandbox_namespace}
    if not (gateway.namespace in seen or gateway.sandbox_namespace in seen):
        return False
    return _forwarded(gateway) and _in_window(gateway, apiserver) and _same_answer(gateway, apiserver)


_SELECTS_SERVICE = re.compile(r'\b(?:service|job|app)\s*=~?\s*"([^"]+)"')


def name_query(entry: AuditEntry) -> AuditEntry:
    """A metrics query that selects one service is named by it (`query metrics/<service>`).

    Prometheus requests carry no object name, yet scenarios name the service whose metrics should be
    read (``query metrics/api-service``). The service the PromQL selects (``service="api-service"``,
    or ``job``/``app``) is that name; a query that selects none, or several, stays unnamed.
    """
    if entry.resource != "metrics" or entry.name:
        return entry
    if entry.served is not None:  # the gateway said which services the answer came from
        if len(entry.served) != 1:
            return entry
        return entry.model_copy(update={"name": entry.served[0].partition("/")[2]})
    promql = str((entry.query or {}).get("query") or "")
    services = set(_SELECTS_SERVICE.findall(promql))
    if len(services) != 1:
        return entry
    return entry.model_copy(update={"name": services.pop()})


def agent_entries(bundle: EvidenceBundle) -> list[AuditEntry]:
    """The requests that count as the agent's (or made at its door), both sources, deduplicated."""
    agent_user = bundle.agent.kube_user
    gateway = [
        e for e in (bundle.gateway_audit.entries if bundle.gateway_audit else []) if e.actor in _DOOR_ACTORS
    ]
    gateway.sort(key=lambda e: e.seq)
    paired: set[int] = set()
    extra: list[AuditEntry] = []
    for entry in sorted(
        bundle.apiserver_audit.entries if bundle.apiserver_audit else [], key=lambda e: e.seq
    ):
        side = _apiserver_side(entry, agent_user)
        if side is None:
            continue
        match = next(
            (
                i
                for i, g in enumerate(gateway)
                if i not in paired and side == "agent" and _same_request(g, entry)
            ),
            None,
        )
        if match is None:
            extra.append(entry)
        else:
            paired.add(match)
    if not gateway:
        return extra
    base = max(e.seq for e in gateway) + 1
    return gateway + [e.model_copy(update={"seq": base + i}) for i, e in enumerate(extra)]


def _unusable(name: str, source: EvidenceSource) -> str:
    detail = f" ({source.detail})" if source.detail else ""
    return f"{name} source {source.type} is {source.status.value}{detail}"
