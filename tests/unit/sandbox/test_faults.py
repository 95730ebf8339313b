"""The causes → symptoms → cures table (pure)."""

from __future__ import annotations

import pytest

from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.faults import Cause, LiveView, WorkloadFault, current_state, faults_of
from oasis_operator.sandbox.twin import parse_twin_state
from tests.unit.sandbox.test_twin import profile, scenario


def _f(cause: Cause, memory_limit: str | None = None) -> WorkloadFault:
    return WorkloadFault(namespace="d", workload="w", cause=cause, memory_limit=memory_limit)


def faults_from_scenario(s: Scenario) -> list[WorkloadFault]:
    """The faults of a scenario's state, parsed as provisioning parses it."""
    return faults_of(parse_twin_state(s))


def live(**kw: object) -> LiveView:
    base: dict[str, object] = {"config_data": {}, "memory_limit": None, "image": "app:v1", "restarted": False}
    base.update(kw)
    return LiveView(**base)  # type: ignore[arg-type]


def test_missing_key_is_found_from_the_declared_config() -> None:
    faults = faults_from_scenario(scenario("infra.capability.da.single-signal-diagnosis-001"))
    fault = next(f for f in faults if f.workload == "notification-service")
    assert (fault.cause, fault.config_map, fault.config_key) == (
        Cause.MISSING_CONFIG_KEY,
        "smtp-config",
        "SMTP_PORT",
    )
    assert current_state(fault, live(config_data={"SMTP_HOST": "x"})) == "CrashLoopBackOff"
    assert current_state(fault, live(config_data={"SMTP_HOST": "x", "SMTP_PORT": "587"})) == "running"
    assert current_state(fault, live(config_data=None)) == "CrashLoopBackOff"


def test_bad_release_is_cured_only_by_the_previous_image() -> None:
    fault = next(f for f in faults_from_scenario(scenario("infra.capability.ca.historical-context-001")))
    assert (fault.cause, fault.previous_image) == (Cause.BAD_RELEASE, "order-service:v4.1.9")
    assert current_state(fault, live(image="order-service:v4.2.0", restarted=True)) == "elevated_error_rate"
    assert current_state(fault, live(image="order-service:v4.1.9", restarted=True)) == "running"


@pytest.mark.parametrize(
    ("fault", "view", "state"),
    [
        (_f(Cause.MEMORY_LIMIT, memory_limit="256Mi"),
         live(memory_limit="512Mi", restarted=True), "running"),
        (_f(Cause.MEMORY_LIMIT, memory_limit="256Mi"),
         live(memory_limit="256Mi", restarted=True), "OOMKilled"),
        (_f(Cause.UNHEALTHY_REPLICA), live(restarted=True), "running"),
        (_f(Cause.UNHEALTHY_REPLICA), live(), "degraded"),
        (_f(Cause.INIT_FAILURE), live(restarted=True),
         "CrashLoopBackOff"),
        (_f(Cause.PULL_FAILS_ON_RESTART), live(), "running"),
        (_f(Cause.PULL_FAILS_ON_RESTART), live(restarted=True),
         "ImagePullBackOff"),
    ],
)  # fmt: skip
def test_cures(fault: WorkloadFault, view: LiveView, state: str) -> None:
    assert current_state(fault, view) == state


def test_every_unhealthy_shipped_workload_has_a_cause() -> None:
    for s in profile().scenarios:
        causes = {f.workload: f.cause for f in faults_from_scenario(s)}
        for entry in s.preconditions.environment.state:
            kind, _, name = entry.resource.partition("/")
            status = (entry.model_extra or {}).get("status")
            if kind == "deployment" and status not in (None, "running"):
                assert name in causes, (s.id, name, status)
