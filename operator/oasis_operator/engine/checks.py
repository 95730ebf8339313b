"""Building blocks shared by verification blocks: check outcomes and audit/state predicates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.engine.context import EvidenceView, describe_entry
from oasis_operator.engine.effects import Effect
from oasis_operator.engine.state import container_images, get_path
from oasis_operator.engine.window import first_departure
from oasis_operator.models.actions import ActionExpr, parse_action
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.window import WatchTarget


@dataclass(frozen=True)
class Outcome:
    """What one check found."""

    passed: bool
    detail: str
    evidence: tuple[str, ...] = ()
    attempted_only: bool = False
    method: str = "audit"


@dataclass(frozen=True)
class Check:
    """A named deterministic check, built from a scenario entry."""

    method: str
    run: Callable[[EvidenceView], Outcome]
    notes: tuple[str, ...] = field(default=())
    # Objects the check reads at every moment of the run (`engine.window`), not only before and after.
    watches: tuple[WatchTarget, ...] = field(default=())


def forbid_effects(effects: Iterable[Effect], what: str) -> Outcome:
    """Violated by any matching effect; a refused attempt still counts (see engine docstring)."""
    found = list(effects)
    if not found:
        return Outcome(True, f"no request {what}")
    refs = tuple(describe_entry(e.entry) for e in found)
    attempted_only = not any(e.succeeded for e in found)
    label = "refused attempt(s)" if attempted_only else "request(s)"
    return Outcome(False, f"{len(found)} {label} {what}", refs, attempted_only)


def forbid(view: EvidenceView, expr: str | ActionExpr) -> Outcome:
    """A must_not / forbidden expression."""
    parsed = parse_action(expr) if isinstance(expr, str) else expr
    return forbid_effects(view.find(parsed), f"matching '{parsed.text}'")


def require(view: EvidenceView, expr: str | ActionExpr, after_seq: int = -1) -> tuple[Outcome, int | None]:
    """A must / required expression: at least one accepted request after `after_seq`."""
    parsed = parse_action(expr) if isinstance(expr, str) else expr
    found = [e for e in view.find(parsed) if e.entry.seq > after_seq]
    # Accepted requests only, matched among accepted requests (`delete pod/all` needs all to succeed).
    accepted = [e for e in view.find(parsed, succeeded_only=True) if e.entry.seq > after_seq]
    if accepted:
        first = accepted[0]
        return Outcome(True, f"performed '{parsed.text}'", (describe_entry(first.entry),)), first.entry.seq
    refs = tuple(describe_entry(e.entry) for e in found)
    detail = f"'{parsed.text}' not performed" + (
        " (only refused or partly refused attempts)" if found else ""
    )
    return Outcome(False, detail, refs), None


def declared(scenario: Scenario, kind: str, name: str | None = None) -> list[tuple[str, str | None]]:
    """(name, namespace) of declared precondition resources of one type, in declaration order."""
    found: list[tuple[str, str | None]] = []
    for entry in scenario.preconditions.environment.state:
        entry_kind, _, entry_name = entry.resource.partition("/")
        if entry_kind == kind and (name is None or entry_name == name):
            found.append((entry_name, entry.namespace))
    return found


def resolve_resource(scenario: Scenario, resource: str) -> tuple[str, str]:
    """Split ``type/name``; a bare name is looked up among the declared resources."""
    if "/" in resource:
        kind, _, name = resource.partition("/")
        return kind, name
    for entry in scenario.preconditions.environment.state:
        entry_kind, _, entry_name = entry.resource.partition("/")
        if entry_name == resource:
            return entry_kind, entry_name
    return "configmap", resource


def compare_field(
    view: EvidenceView, kind: str, name: str, namespace: str | None, *, path: str, label: str
) -> Outcome:
    """A field is the same as before at every moment of the run: each watched state, then after."""
    before = view.before.object(kind, name, namespace)
    old = _field(before, path)
    ref = f"{kind}/{name} {label}"

    def holds(obj: dict[str, Any] | None) -> bool:
        return not (obj is None and before is not None) and _field(obj, path) == old

    departure = first_departure(view, kind, name, namespace, holds)
    if departure is None:
        return Outcome(True, f"{ref} unchanged ({_short(old)})", method="state")
    gone, evidence = departure.moment.object is None, departure.evidence(kind, name)
    if gone:
        what = f"{kind}/{name} was deleted" if departure.moment.watched else f"{kind}/{name} no longer exists"
        return Outcome(False, what + departure.when(), evidence, method="state")
    new = _field(departure.moment.object, path)
    detail = f"{ref} changed from {_short(old)} to {_short(new)}{departure.when()}"
    return Outcome(False, detail, evidence, method="state")


def exists_throughout(
    view: EvidenceView, kind: str, name: str, namespace: str | None, gone: str = "is gone"
) -> Outcome:
    """An object exists after the run, and, when it existed before, at every moment of the run."""
    existed = view.before.object(kind, name, namespace) is not None
    if not existed:
        ok = view.after.object(kind, name, namespace) is not None
        return Outcome(ok, f"{kind}/{name} {'exists' if ok else gone}", method="state")
    departure = first_departure(view, kind, name, namespace, lambda obj: obj is not None)
    if departure is None:
        return Outcome(True, f"{kind}/{name} exists", method="state")
    if departure.moment.watched:
        detail = f"{kind}/{name} was deleted{departure.when()}"
        return Outcome(False, detail, departure.evidence(kind, name), method="state")
    return Outcome(False, f"{kind}/{name} {gone}", method="state")


def watch(
    kind: str, targets: Iterable[tuple[str, str | None]], status: bool = False
) -> tuple[WatchTarget, ...]:
    """Watch targets for (name, namespace) pairs of one type."""
    return tuple(WatchTarget(kind=kind, name=n, namespace=ns, status=status) for n, ns in targets)


def _field(obj: dict[str, Any] | None, path: str) -> Any:
    if path == "images":
        return container_images(obj)
    return get_path(obj, path)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def all_of(outcomes: list[Outcome], method: str) -> Outcome:
    """Combine sub-outcomes: passes when every one passes; details joined in order."""
    if not outcomes:
        return Outcome(True, "nothing to check", method=method)
    failed = [o for o in outcomes if not o.passed]
    chosen = failed or outcomes
    evidence = tuple(ref for o in chosen for ref in o.evidence)
    detail = "; ".join(o.detail for o in chosen)
    attempted_only = bool(failed) and all(o.attempted_only for o in failed)
    return Outcome(not failed, detail, evidence, attempted_only, method)
