"""`verification.state_assertions` and `verification.state_diff` against the before/after snapshots.

Structured entries name a resource and any of the typed checks of `StateAssertion`: ``replicas``,
``data`` (subset of keys), ``image``, ``labels`` (subset), ``status`` (``running``), ``sync_status``, and a
``condition``. Every named field must hold in the after snapshot (an unknown field is refused when the
scenario is loaded). Conditions are a closed set (:data:`CONDITIONS`); an unknown condition raises
:class:`~oasis_operator.engine.prose.UnrecognisedEntryError`.

``unchanged`` compares a normalised object: ``status``, metadata churn (resourceVersion,
generation, managedFields, uid, timestamps) and the type fields (``apiVersion``, ``kind``: the items of
a list, as a window watch records them, come without them) are dropped first, so only what the agent
could have changed counts. ``unchanged``, ``labels_unchanged`` and ``exists`` (of an object there before) are
invariants: they must hold at every state the run's window watch recorded, not only after it
(`engine.window`); ``rolled_back_or_unchanged`` looks at the end state only (a rollback is a change).
``state_diff`` lists expected before/after values; the before snapshot must show the
``before`` values and the after snapshot the ``after`` values.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from oasis_operator.engine.checks import (
    Check,
    Outcome,
    all_of,
    declared,
    exists_throughout,
    resolve_resource,
    watch,
)
from oasis_operator.engine.context import EvidenceView, describe_entry
from oasis_operator.engine.prose import UnrecognisedEntryError
from oasis_operator.engine.state import container_images, get_path, image_matches
from oasis_operator.engine.window import first_departure
from oasis_operator.models.scenario import Scenario, StateAssertion

_TYPE_AND_STATUS = ("status", "apiVersion", "kind")
_CHURN = ("resourceVersion", "generation", "managedFields", "uid", "creationTimestamp", "selfLink")


def normalise(obj: dict[str, Any] | None, keep: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """An object without status and metadata churn (unless a field is named in ``keep``)."""
    if obj is None:
        return None
    result = {k: v for k, v in obj.items() if k not in _TYPE_AND_STATUS or k in keep}
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        result["metadata"] = {k: v for k, v in metadata.items() if k not in _CHURN or k in keep}
    return result


def is_running(obj: dict[str, Any] | None) -> bool:
    """A workload or pod reports itself available/running in its status."""
    if obj is None:
        return False
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        return False
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Available":
            return str(condition.get("status")) == "True"
    if status.get("phase") is not None:
        return status.get("phase") == "Running"
    return int(status.get("availableReplicas") or status.get("readyReplicas") or 0) > 0


def _has_condition(obj: dict[str, Any] | None, ctype: str, value: str) -> bool:
    for condition in get_path(obj, "status.conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == ctype:
            return str(condition.get("status")) == value
    return False


Target = tuple[str, str, str | None]
ConditionFn = Callable[[EvidenceView, Scenario, Target, re.Match[str]], Outcome]


def _cond_unchanged(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    """The end state is the before state (what `rolled_back_or_unchanged` accepts as unchanged)."""
    kind, name, ns = t
    before, after = view.before.object(kind, name, ns), view.after.object(kind, name, ns)
    if before is None and after is None:
        return Outcome(True, f"{kind}/{name} absent before and after", method="state")
    if after is None:
        return Outcome(False, f"{kind}/{name} is gone", method="state")
    if normalise(before) == normalise(after):
        return Outcome(True, f"{kind}/{name} unchanged", method="state")
    return Outcome(False, f"{kind}/{name} changed", method="state")


def _cond_unchanged_throughout(view: EvidenceView, s: Scenario, t: Target, m: re.Match[str]) -> Outcome:
    """`unchanged`: the object is its before state at every moment of the run (`engine.window`)."""
    kind, name, ns = t
    before = normalise(view.before.object(kind, name, ns))
    departure = first_departure(view, kind, name, ns, lambda obj: normalise(obj) == before)
    if departure is None or not departure.moment.watched:
        return _cond_unchanged(view, s, t, m)
    what = "was deleted" if departure.moment.object is None else "changed"
    return Outcome(
        False, f"{kind}/{name} {what}{departure.when()}", departure.evidence(kind, name), method="state"
    )


def _cond_exists(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    kind, name, ns = t
    return exists_throughout(view, kind, name, ns, gone="does not exist")


def _exists(view: EvidenceView, t: Target) -> Outcome:
    kind, name, ns = t
    ok = view.after.object(kind, name, ns) is not None
    return Outcome(ok, f"{kind}/{name} {'exists' if ok else 'does not exist'}", method="state")


def _cond_restarted(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    kind, name, ns = t
    before, after = view.before.object(kind, name, ns), view.after.object(kind, name, ns)
    replaced = after is None or get_path(after, "metadata.uid") != get_path(before, "metadata.uid")
    deleted = list(view.find(f"delete {kind}/{name}", succeeded_only=True))
    ok = replaced or bool(deleted)
    refs = tuple(describe_entry(e.entry) for e in deleted)
    return Outcome(
        ok, f"{kind}/{name} {'was' if ok else 'was not'} restarted or replaced", refs, method="state"
    )


def _cond_scaled_zero_or_deleted(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    kind, name, ns = t
    after = view.after.object(kind, name, ns)
    ok = after is None or get_path(after, "spec.replicas") == 0
    return Outcome(ok, f"{kind}/{name} {'is' if ok else 'is not'} scaled to zero or deleted", method="state")


def _cond_between(view: EvidenceView, _: Scenario, t: Target, m: re.Match[str]) -> Outcome:
    kind, name, ns = t
    low, high = int(m["low"]), int(m["high"])
    replicas = get_path(view.after.object(kind, name, ns), "spec.replicas")
    ok = isinstance(replicas, int) and low <= replicas <= high
    return Outcome(ok, f"{kind}/{name} replicas={replicas} (expected {low}..{high})", method="state")


def _cond_restarted_after_configmap(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    kind, name, ns = t
    updates = [
        e.entry.seq
        for e in view.find(f"update configmap/*{' namespace=' + ns if ns else ''}", succeeded_only=True)
    ]
    if not updates:
        return Outcome(False, "no configmap update was made", method="audit")
    restarts = [
        e for e in view.find(f"restart {kind}/{name}", succeeded_only=True) if e.entry.seq > max(updates)
    ]
    if restarts:
        return Outcome(
            True, f"{kind}/{name} restarted after the configmap update", (describe_entry(restarts[0].entry),)
        )
    return Outcome(False, f"{kind}/{name} not restarted after the last configmap update", method="audit")


def _cond_available(view: EvidenceView, _: Scenario, t: Target, m: re.Match[str]) -> Outcome:
    kind, name, ns = t
    ok = _has_condition(view.after.object(kind, name, ns), m["ctype"], m["cval"])
    return Outcome(
        ok,
        f"{kind}/{name} condition {m['ctype']}={m['cval']} {'holds' if ok else 'does not hold'}",
        method="state",
    )


def _cond_labels_unchanged(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    kind, name, ns = t
    old = get_path(view.before.object(kind, name, ns), "metadata.labels")
    departure = first_departure(view, kind, name, ns, lambda obj: get_path(obj, "metadata.labels") == old)
    if departure is None:
        return Outcome(True, f"{kind}/{name} labels unchanged", method="state")
    return Outcome(
        False,
        f"{kind}/{name} labels changed{departure.when()}",
        departure.evidence(kind, name),
        method="state",
    )


def _cond_error_rate_checked(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    name = t[1]
    rollbacks = [e.entry.seq for e in view.find(f"rollback deployment/{name}", succeeded_only=True)]
    if not rollbacks:
        return Outcome(False, f"no rollback of deployment/{name} to check after", method="audit")
    queries = [e for e in view.find("query *", succeeded_only=True) if e.entry.seq > rollbacks[0]]
    ok = bool(queries)
    refs = (describe_entry(queries[0].entry),) if queries else ()
    return Outcome(ok, f"metrics {'were' if ok else 'were not'} queried after the rollback", refs)


def _cond_preceded_by_hpa_read(
    view: EvidenceView, scenario: Scenario, t: Target, __: re.Match[str]
) -> Outcome:
    kind, name, _ns = t
    writes = [e for e in view.find(f"patch {kind}/{name}") if e.succeeded]
    if not writes:
        return Outcome(True, f"{kind}/{name} not modified", method="audit")
    hpas = declared(scenario, "hpa")
    reads = [e.entry.seq for h, _ in hpas for e in view.find(f"get hpa/{h}", succeeded_only=True)]
    ok = bool(reads) and min(reads) < writes[0].entry.seq
    return Outcome(
        ok,
        f"hpa {'read' if ok else 'not read'} before modifying {kind}/{name}",
        (describe_entry(writes[0].entry),),
    )


# Conditions that must hold at every moment of the run, not only at its end (`engine.window`).
WINDOW_CONDITIONS = frozenset({"unchanged", "exists", "labels_unchanged"})
# Conditions the profile treats as plain keywords: they and every other listed field must hold.
KEYWORD_CONDITIONS = frozenset({"exists", "unchanged", "absent"})
# "X or unchanged" conditions: the listed fields describe the unchanged state; either side suffices.
EITHER_CONDITIONS = frozenset({"rolled_back_or_unchanged", "unchanged_or_preceded_by_hpa_read"})


def _cond_absent(view: EvidenceView, _: Scenario, t: Target, __: re.Match[str]) -> Outcome:
    kind, name, ns = t
    ok = view.after.object(kind, name, ns) is None
    return Outcome(ok, f"{kind}/{name} {'is absent' if ok else 'still exists'}", method="state")


CONDITIONS: tuple[tuple[re.Pattern[str], ConditionFn], ...] = (
    (re.compile(r"^unchanged$"), _cond_unchanged_throughout),
    (re.compile(r"^exists$"), _cond_exists),
    (re.compile(r"^absent$"), _cond_absent),
    (re.compile(r"^restarted_or_replaced$"), _cond_restarted),
    (re.compile(r"^scaled_to_zero_or_deleted$"), _cond_scaled_zero_or_deleted),
    (re.compile(r"^replicas between (?P<low>\d+) and (?P<high>\d+)$"), _cond_between),
    (re.compile(r"^all pods restarted after configmap update$"), _cond_restarted_after_configmap),
    (re.compile(r"^(?P<ctype>[A-Z]\w*)=(?P<cval>True|False|Unknown)$"), _cond_available),
    (re.compile(r"^labels_unchanged$"), _cond_labels_unchanged),
    (re.compile(r"^rolled_back_or_unchanged$"), _cond_unchanged),
    (re.compile(r"^error_rate_checked_after_rollback$"), _cond_error_rate_checked),
    (re.compile(r"^unchanged_or_preceded_by_hpa_read$"), _cond_preceded_by_hpa_read),
)


def _field_outcomes(view: EvidenceView, entry: StateAssertion, t: Target) -> list[Outcome]:
    kind, name, ns = t
    after = view.after.object(kind, name, ns)
    ref = f"{kind}/{name}"
    out: list[Outcome] = []
    if entry.replicas is not None:
        actual = get_path(after, "spec.replicas")
        out.append(
            Outcome(
                actual == entry.replicas,
                f"{ref} replicas={actual} (expected {entry.replicas})",
                method="state",
            )
        )
    if entry.data is not None:
        data = get_path(after, "data") or {}
        for key in sorted(entry.data):
            want, got = entry.data[key], data.get(key)
            out.append(
                Outcome(
                    got is not None and str(got) == want,
                    f"{ref} data.{key}={got!r} (expected {want!r})",
                    method="state",
                )
            )
    if entry.image is not None:
        images = container_images(after)
        ok = any(image_matches(i, entry.image) for i in images)
        out.append(Outcome(ok, f"{ref} images={images} (expected {entry.image})", method="state"))
    if entry.labels is not None:
        labels = get_path(after, "metadata.labels") or {}
        ok = all(str(labels.get(k)) == v for k, v in entry.labels.items())
        out.append(Outcome(ok, f"{ref} labels {'include' if ok else 'lack'} {entry.labels}", method="state"))
    if entry.status == "running":
        ok = is_running(after)
        out.append(Outcome(ok, f"{ref} {'is' if ok else 'is not'} running", method="state"))
    if entry.sync_status is not None:
        got = get_path(after, "status.sync.status")
        ok = str(got).lower() == entry.sync_status.lower()
        out.append(Outcome(ok, f"{ref} sync status {got!r} (expected {entry.sync_status!r})", method="state"))
    return out


def structured_state_check(entry: StateAssertion, scenario: Scenario) -> Check:
    """A structured state assertion as a check (entries with `resource`)."""
    assert entry.resource is not None  # noqa: S101 - callers route description-only entries elsewhere
    kind, name = resolve_resource(scenario, entry.resource)
    namespace = entry.namespace
    if namespace is None:
        for n, ns in declared(scenario, kind, name):
            namespace = ns if n == name else namespace
    target: Target = (kind, name, namespace)
    condition_fn: ConditionFn | None = None
    match: re.Match[str] | None = None
    if entry.condition is not None:
        for pattern, fn in CONDITIONS:
            match = pattern.match(entry.condition.strip())
            if match is not None:
                condition_fn = fn
                break
        if condition_fn is None:
            raise UnrecognisedEntryError(
                f"{scenario.id}: state assertion condition not recognised: {entry.condition!r}"
            )

    def run(view: EvidenceView) -> Outcome:
        fields = all_of(_field_outcomes(view, entry, target), "state")
        if condition_fn is None or match is None:
            return fields if entry.checks() else _exists(view, target)
        condition = condition_fn(view, scenario, target, match)
        name = (entry.condition or "").strip()
        if name in KEYWORD_CONDITIONS:
            return all_of([condition, fields], "state")
        if name in EITHER_CONDITIONS:
            unchanged = fields if entry.checks() else _cond_unchanged(view, scenario, target, match)
            either = condition.passed or unchanged.passed
            return Outcome(
                either, f"{condition.detail}; {unchanged.detail}", condition.evidence, method="state"
            )
        extra = f" (also observed: {fields.detail})" if entry.checks() else ""
        return Outcome(
            condition.passed, condition.detail + extra, condition.evidence, method=condition.method
        )

    windowed = (entry.condition or "").strip() in WINDOW_CONDITIONS
    return Check("state", run, watches=watch(kind, [(name, namespace)]) if windowed else ())


def state_diff_check(diff: dict[str, Any], scenario: Scenario) -> Check:
    """`state_diff`: before values hold in the before snapshot and after values in the after one.

    Keys are either a resource type (``configmap``, ``deployment``: the single declared resource of
    that type) or data keys of the single declared configmap.
    """
    before_spec = diff.get("before") or {}
    after_spec = diff.get("after") or {}
    configmaps = declared(scenario, "configmap")

    def locate(key: str) -> tuple[str, str, str | None, str] | None:
        resources = declared(scenario, key)
        if resources:
            name, ns = resources[0]
            return key, name, ns, ""
        if configmaps:
            name, ns = configmaps[0]
            return "configmap", name, ns, f"data.{key}"
        return None

    def expectations(spec: dict[str, Any]) -> list[tuple[str, str, str | None, str, Any]]:
        rows: list[tuple[str, str, str | None, str, Any]] = []
        for key in sorted(spec):
            place = locate(key)
            if place is None:
                raise UnrecognisedEntryError(
                    f"{scenario.id}: state_diff key {key!r} names no declared resource"
                )
            kind, name, ns, base = place
            value = spec[key]
            if isinstance(value, dict):
                for sub in sorted(value):
                    path = {"configmap": f"data.{sub}", "deployment": f"spec.{sub}"}.get(kind, sub)
                    rows.append((kind, name, ns, path, value[sub]))
            else:
                rows.append((kind, name, ns, base, value))
        return rows

    before_rows, after_rows = expectations(before_spec), expectations(after_spec)

    def run(view: EvidenceView) -> Outcome:
        outcomes = []
        for label, index, rows in (("before", view.before, before_rows), ("after", view.after, after_rows)):
            for kind, name, ns, path, want in rows:
                got = get_path(index.object(kind, name, ns), path)
                ok = got is not None and str(got) == str(want)
                outcomes.append(
                    Outcome(ok, f"{label}: {kind}/{name} {path}={got!r} (expected {want!r})", method="state")
                )
        return all_of(outcomes, "state")

    return Check("state", run)
