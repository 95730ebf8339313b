"""Bounded history: when a finished evaluation is due, and what deleting it removes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.evaluation import expiry
from oasis_operator.evaluation.expiry import expire_when_due, seconds_until_expiry, ttl_of
from oasis_operator.models.crd import EvaluationRef
from oasis_operator.settings import OperatorSettings

NOW = datetime(2026, 12, 3, 21, 0, 30, tzinfo=UTC)
OWNER = EvaluationRef(namespace="team-a", name="careful", uid="u-1")


def test_the_spec_ttl_wins_over_the_operator_default_and_zero_counts() -> None:
    assert ttl_of({"ttlSecondsAfterFinished": 60}, 3600) == 60
    assert ttl_of({"ttlSecondsAfterFinished": 0}, 3600) == 0
    assert ttl_of({}, 3600) == 3600
    assert ttl_of({}, None) is None


@pytest.mark.parametrize("phase", ["Completed", "Aborted", "Failed"])
def test_a_finished_run_is_due_its_ttl_after_completion(phase: str) -> None:
    status = {"phase": phase, "completedAt": "2026-12-03T21:00:00Z"}
    assert seconds_until_expiry(status, 60, NOW) == 30.0
    assert seconds_until_expiry(status, 10, NOW) == 0.0  # overdue: at once


@pytest.mark.parametrize(
    "status",
    [
        {"phase": "Safety", "completedAt": "2026-12-03T21:00:00Z"},  # still running
        {"phase": "Completed"},  # no completion time
        {"phase": "Completed", "completedAt": "yesterday"},
        {},
    ],
)
def test_a_run_not_finished_is_never_due(status: dict[str, Any]) -> None:
    assert seconds_until_expiry(status, 0, NOW) is None


def test_without_a_ttl_a_finished_evaluation_is_kept() -> None:
    assert (
        seconds_until_expiry({"phase": "Completed", "completedAt": "2026-12-03T21:00:00Z"}, None, NOW) is None
    )


def test_the_operator_default_is_a_setting() -> None:
    assert OperatorSettings.from_env({}).ttl_seconds_after_finished is None
    assert (
        OperatorSettings.from_env({"OASIS_TTL_SECONDS_AFTER_FINISHED": "86400"}).ttl_seconds_after_finished
        == 86400
    )


def test_deleting_removes_the_documents_then_this_evaluation_only(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, Any, Any]] = []

    def fake(_api: ApiClient, method: str, path: str, body: Any = None, query: Any = None, **_: Any) -> Any:
        calls.append((method, path, body, query))
        if method == "GET":
            return {
                "items": [{"metadata": {"name": "careful-run"}}, {"metadata": {"name": "careful-report"}}]
            }
        return {}

    monkeypatch.setattr(expiry, "request", fake)
    status = {"phase": "Completed", "completedAt": "2000-01-01T00:00:00Z"}
    assert asyncio.run(expire_when_due(ApiClient(), OWNER, {"ttlSecondsAfterFinished": 0}, status, None))
    assert [(m, p) for m, p, _, _ in calls] == [
        ("GET", "/api/v1/namespaces/team-a/configmaps"),
        ("DELETE", "/api/v1/namespaces/team-a/configmaps/careful-run"),
        ("DELETE", "/api/v1/namespaces/team-a/configmaps/careful-report"),
        ("DELETE", "/apis/oasis.evaluation.dev/v1alpha1/namespaces/team-a/oasisevaluations/careful"),
    ]
    assert calls[0][3] == {"labelSelector": "oasis.evaluation.dev/evaluation-uid=u-1"}
    assert calls[-1][2]["preconditions"] == {"uid": "u-1"}  # never another object of the same name


def test_a_kept_evaluation_is_not_deleted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expiry, "request", lambda *a, **k: pytest.fail("nothing may be deleted"))
    status = {"phase": "Completed", "completedAt": "2000-01-01T00:00:00Z"}
    assert not asyncio.run(expire_when_due(ApiClient(), OWNER, {}, status, None))
