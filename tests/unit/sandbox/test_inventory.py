"""`inventory.orphans`: which environments no live evaluation owns, from their objects alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from oasis_operator.sandbox.inventory import EVALUATION_ANNOTATION, orphans
from oasis_operator.sandbox.naming import control_namespace, environment_namespace_prefix
from oasis_operator.sandbox.teardown import ENV_LABEL

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
PREFIX = "sbx"


def _object(env_id: str, evaluation: str | None, age: timedelta, control: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "labels": {ENV_LABEL: env_id},
        "creationTimestamp": (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if control:
        meta |= {"name": f"record-{env_id}", "namespace": control_namespace(PREFIX)}
    else:
        meta["name"] = environment_namespace_prefix(PREFIX, env_id) + "app"
    if evaluation is not None:
        meta["annotations"] = {EVALUATION_ANNOTATION: evaluation}
    return {"metadata": meta}


def test_an_environment_of_a_deleted_evaluation_is_an_orphan_and_a_live_ones_is_not() -> None:
    items = [
        _object("e1", "team-a/gone", timedelta(minutes=1)),
        _object("e2", "team-a/live", timedelta(days=2)),
    ]
    assert orphans(items, PREFIX, lambda ev: ev == "team-a/live", NOW) == ["e1"]


def test_without_an_evaluation_recorded_only_age_makes_an_orphan() -> None:
    items = [_object("young", None, timedelta(hours=1)), _object("old", None, timedelta(hours=7))]
    assert orphans(items, PREFIX, lambda ev: False, NOW) == ["old"]


def test_an_evaluation_recorded_on_any_object_of_the_environment_counts() -> None:
    items = [_object("e1", None, timedelta(hours=9)), _object("e1", "team-a/live", timedelta(hours=8), True)]
    assert orphans(items, PREFIX, lambda ev: ev == "team-a/live", NOW) == []


def test_another_operators_sandboxes_are_never_collected() -> None:
    foreign = _object("e9", "team-a/gone", timedelta(days=1))
    foreign["metadata"]["name"] = "other-prefix-e9-app"
    assert orphans([foreign], PREFIX, lambda ev: False, NOW) == []
