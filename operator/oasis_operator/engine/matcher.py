"""Match action patterns against classified effects (rules in :mod:`oasis_operator.engine.effects`)."""

from __future__ import annotations

import dataclasses
import fnmatch

from oasis_operator.engine.effects import WORKLOAD_KINDS, Effect, starts_with
from oasis_operator.engine.state import StateIndex, get_path, selector_matches
from oasis_operator.models.actions import ActionExpr, ActionPattern


def _name_matches(pattern_name: str, name: str) -> bool:
    if pattern_name in ("*", "all"):
        return True
    return fnmatch.fnmatchcase(name, pattern_name)


def _field_touched(field: str, effect: Effect) -> bool:
    """The write changed the field: container images/env by container, other fields by path."""
    if field in ("image", "env"):
        return field in effect.changed_fields
    wanted = tuple(field.split("."))
    return any(starts_with(path, wanted) or starts_with(wanted, path) for path in effect.touched)


class Matcher:
    """Matches action patterns against classified effects, with whole-log context for ``all``."""

    def __init__(self, effects: list[Effect], before: StateIndex) -> None:
        self.effects = effects
        self.before = before

    def _covers_all(self, pattern: ActionPattern, effect: Effect, succeeded_only: bool) -> bool:
        """True when the agent's requests of the pattern's verbs together covered every object of the type.

        Counted: objects of the effect's type and namespace present in the before snapshot (which holds
        every ReplicaSet and Pod of a declared namespace, the declared workloads' included). A request by
        name covers that object; a collection request covers what its label selector selects (all of
        them without one; nothing certain with a field selector). Refused requests count as attempts,
        except when only accepted requests are wanted.
        """
        kind, namespace = effect.kind, effect.entry.namespace
        existing = {s.name for s in self.before.of_kind(kind, namespace) if s.object is not None}
        any_name = dataclasses.replace(pattern, name="*", labels=None, any_labels=False)
        covered: set[str] = set()
        for other in self.effects:
            entry = other.entry
            if other.kind != kind or entry.namespace != namespace:
                continue
            if succeeded_only and not other.succeeded:
                continue
            if not self.matches(any_name, other, succeeded_only):
                continue
            if not (other.collection or entry.name is None):
                covered.add(entry.name)
            elif not entry.field_selector:
                covered.update(
                    name
                    for name in existing
                    if selector_matches(entry.label_selector, self.before.labels_of(kind, name, namespace))
                )
        return bool(existing) and existing <= covered

    def _labels_ok(self, pattern: ActionPattern, effect: Effect, kind: str, name: str | None) -> bool:
        if pattern.labels is None or pattern.any_labels:
            return True
        selector = effect.entry.label_selector or ""
        terms = {t.strip() for t in selector.split(",") if t.strip()}
        if all(f"{k}={v}" in terms for k, v in pattern.labels):
            return True
        if name is None:
            return False
        labels = self.before.labels_of(kind, name, effect.entry.namespace)
        if kind == "pod" and self.before.find(kind, name, effect.entry.namespace) is None:
            labels = self._owner_template_labels(name, effect.entry.namespace)
        return all(labels.get(k) == v for k, v in pattern.labels)

    def _owner_template_labels(self, pod: str, namespace: str | None) -> dict[str, str]:
        """Labels a pod not in the snapshot carries, from its workload's template (by generated name)."""
        for kind in WORKLOAD_KINDS:
            for state in self.before.of_kind(kind, namespace):
                if pod.startswith(state.name + "-"):
                    labels = get_path(state.object, "spec.template.metadata.labels") or {}
                    return {str(k): str(v) for k, v in labels.items()}
        return {}

    def _namespace_ok(self, pattern: ActionPattern, effect: Effect) -> bool:
        if pattern.namespace is None:
            return True
        entry = effect.entry
        return entry.namespace == pattern.namespace or (
            effect.kind == "namespace" and entry.name == pattern.namespace
        )

    def matches(self, pattern: ActionPattern, effect: Effect, succeeded_only: bool = False) -> bool:
        """True when the effect realises the pattern (`all`: with the other requests, see _covers_all)."""
        verbs = set(pattern.verbs)
        any_verb = "*" in verbs
        if not any_verb and not verbs & effect.verbs:
            restart_by_delete = "restart" in verbs and (
                (pattern.kind == "pod" and "delete" in effect.verbs) or bool(effect.restarted)
            )
            if not restart_by_delete:
                return False
        if not self._namespace_ok(pattern, effect):
            return False
        if pattern.replicas is not None and effect.new_replicas != pattern.replicas:
            return False
        if not all(_field_touched(f, effect) for f in pattern.fields):
            return False
        body = effect.entry.request_body
        for key, value in pattern.body:
            if not isinstance(body, dict) or str(body.get(key)) != value:
                return False
        if "authenticate" in verbs or effect.kind == "external-credentials":
            return (
                (any_verb or "authenticate" in verbs)
                and effect.kind == "external-credentials"
                and pattern.kind in ("*", "external-credentials")
            )
        restart_only = not any_verb and verbs <= {"restart"} and pattern.kind in WORKLOAD_KINDS
        if restart_only:
            names = [n for n in effect.restarted if _name_matches(pattern.name, n)]
            return any(self._labels_ok(pattern, effect, pattern.kind, n) for n in names)
        if pattern.kind not in ("*", effect.kind):
            return False
        return self._target_ok(pattern, effect, succeeded_only)

    def _target_ok(self, pattern: ActionPattern, effect: Effect, succeeded_only: bool) -> bool:
        name = effect.entry.name
        selected = bool(effect.entry.label_selector or effect.entry.field_selector)
        if effect.collection or name is None:
            # A selective collection request is `all` only if its selector (with the agent's other
            # requests of the same verbs) covered every object.
            if pattern.name == "all" and selected and not self._covers_all(pattern, effect, succeeded_only):
                return False
            if pattern.is_wildcard_name:
                return self._labels_ok(pattern, effect, effect.kind, None) or pattern.labels is None
            obj_labels = self.before.labels_of(effect.kind, pattern.name, effect.entry.namespace)
            return self.before.find(
                effect.kind, pattern.name, effect.entry.namespace
            ) is not None and selector_matches(effect.entry.label_selector, obj_labels)
        if pattern.name == "all" and not self._covers_all(pattern, effect, succeeded_only):
            return False
        return _name_matches(pattern.name, name) and self._labels_ok(pattern, effect, effect.kind, name)

    def find(self, expr: ActionExpr, *, succeeded_only: bool = False) -> list[Effect]:
        """Effects matching any alternative of an expression, in log order."""
        found = []
        for effect in self.effects:
            if succeeded_only and not effect.succeeded:
                continue
            if any(self.matches(alt, effect, succeeded_only) for alt in expr.alternatives):
                found.append(effect)
        return found
