"""One environment's life through `environments.session`, against the real local control plane.

Open gives working credentials and times `provision` and `credentials`; finish revokes them and takes the
after-snapshot; collect reads the gateway's record once; close removes the sandbox now or in the
background (its `teardown` phase lands on the clock when it is done, and the removal logs with the
environment's id). Cancelling an open while the sandbox is being built, or a failure after it was built,
leaves no sandbox behind.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.environments.dynamics import Dynamics
from oasis_operator.environments.session import Environments, EnvironmentSession, SessionOptions
from oasis_operator.environments.timings import PhaseClock
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway
from oasis_operator.kube import request, resource_path
from oasis_operator.logs import current_ids
from oasis_operator.models.environment import Environment
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.naming import new_environment_id
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider, SandboxRecord
from oasis_operator.sandbox.teardown import TeardownReport
from tests.cluster_fixtures import Cluster
from tests.unit.sandbox.test_twin import scenario

SCENARIO = "infra.safety.be.zone-violation-001"
KINDS = ("Namespace", "ClusterRole", "ClusterRoleBinding", "Node", "PersistentVolume")
T = TypeVar("T")


def standing(api: ApiClient, env_id: str) -> list[str]:
    """Every object of the environment that is neither gone nor being deleted."""
    found = []
    for kind in KINDS:
        items = request(api, "GET", resource_path(kind), query={"labelSelector": f"{ENV_LABEL}={env_id}"})
        found += [f"{kind}/{i['metadata']['name']}" for i in items["items"]
                  if not i["metadata"].get("deletionTimestamp")]  # fmt: skip
    return found


def live(gateway: Gateway, env_id: str) -> bool:
    """The gateway still holds the environment's live state (not released)."""
    try:
        gateway.state(env_id)
    except KeyError:
        return False
    return True


def with_gateway(cluster: Cluster, tmp_path: Path, main: Callable[[Gateway], Awaitable[T]]) -> T:
    async def run() -> T:
        gateway = Gateway(cluster.kubeconfig, tmp_path / "gateway")
        await gateway.start()
        try:
            return await main(gateway)
        finally:
            await gateway.stop()

    return asyncio.run(run())


def as_agent(kubeconfig: str) -> int:
    """The status of the agent's list of Deployments in its scope (`frontend`), through the gateway."""
    client = kube_config.new_client_from_config_dict(yaml.safe_load(kubeconfig))
    try:
        request(client, "GET", resource_path("Deployment", "frontend"), timeout=30)
    except ApiException as exc:
        return int(exc.status)
    finally:
        client.close()
    return 200


def test_a_session_opens_finishes_collects_and_closes(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    clock = PhaseClock()
    evaluation = f"tests/session-{uuid.uuid4().hex[:6]}"

    async def main(gateway: Gateway) -> dict[str, Any]:
        environments = Environments(SandboxProvider(api, prefix="ss"), gateway)
        session = await environments.open(scenario(SCENARIO), evaluation=evaluation, clock=clock)
        env = session.record.environment
        seen: dict[str, Any] = {"env": env, "opened": sorted(clock.seconds)}
        async with session:
            seen["open_status"] = await asyncio.to_thread(as_agent, session.credentials.kubeconfig_yaml)
            finished = await session.finish()
            seen["finished"] = finished
            seen["after_finish"] = await asyncio.to_thread(as_agent, session.credentials.kubeconfig_yaml)
            seen["collected"] = await session.collect()
            with pytest.raises(RuntimeError, match="collected already"):
                await session.collect()
        seen["state_kept"] = live(gateway, env.id)
        seen["standing"] = await asyncio.to_thread(standing, api, env.id)
        return seen

    seen = with_gateway(cluster, tmp_path, main)
    env: Environment = seen["env"]
    assert seen["opened"] == ["credentials", "provision"]
    assert seen["open_status"] == 200, "the credentials reach the sandbox through the gateway"
    finished = seen["finished"]
    assert finished.environment_id == env.id
    assert finished.kube_user == env.agent.username
    assert finished.before, "the before-snapshot of the provisioned twin"
    assert {(s.kind, s.name) for s in finished.after} == {(s.kind, s.name) for s in finished.before}
    assert finished.window.start < finished.window.end
    assert seen["after_finish"] == 401, "finish revokes the agent's token"
    records = seen["collected"].records
    assert records.gateway_audit is not None
    assert [e.response_code for e in records.gateway_audit.entries] == [200, 401]
    assert records.apiserver_audit is None  # no API-server audit on this target
    assert {"dynamics", "afterSnapshot", "teardown"} <= set(clock.seconds)
    assert "evidence" not in clock.seconds, "the caller times collect with what it builds from it"
    assert seen["state_kept"] is False
    assert seen["standing"] == [], "close removed the sandbox before it returned"


class SlowProvider(SandboxProvider):
    """Signals once the sandbox is built, then holds the provisioning thread until released."""

    def __init__(self, api: ApiClient, prefix: str) -> None:
        super().__init__(api, prefix=prefix)
        self.built = threading.Event()
        self.release = threading.Event()

    def provision(
        self, scenario: Scenario, evaluation: str | None = None, env_id: str | None = None
    ) -> SandboxRecord:
        record = super().provision(scenario, evaluation, env_id)
        self.built.set()
        self.release.wait(120)
        return record


def test_cancelling_an_open_during_provisioning_leaves_no_sandbox(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    provider = SlowProvider(api, prefix="sc")
    env_id = new_environment_id()

    async def main(gateway: Gateway) -> tuple[bool, list[str], list[str], bool]:
        environments = Environments(provider, gateway)
        opened = environments.open(scenario(SCENARIO), evaluation="tests/cancel", env_id=env_id)
        opening = asyncio.create_task(opened)
        await asyncio.to_thread(provider.built.wait, 120)
        built = await asyncio.to_thread(standing, api, env_id)
        opening.cancel()
        await asyncio.sleep(0.2)
        provider.release.set()
        cancelled = False
        try:
            await opening
        except asyncio.CancelledError:
            cancelled = True
        left = await asyncio.to_thread(standing, api, env_id)
        return cancelled, built, left, gateway.has_environment(env_id)

    cancelled, built, left, registered = with_gateway(cluster, tmp_path, main)
    assert cancelled
    assert built, "the sandbox existed when the open was cancelled"
    assert left == [], "the cancelled open removed the sandbox it had built"
    assert registered is False, "a cancelled open never registers the environment"


class RefusingAudit(ApiServerAudit):
    """An API-server audit whose subscription fails (after the sandbox is built and registered)."""

    def subscribe(self, env: Environment, since: str) -> None:
        raise OSError("audit stream unreachable")


def test_an_open_that_fails_after_provisioning_removes_the_sandbox(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    clock = PhaseClock()
    env_id = new_environment_id()
    audit = RefusingAudit(api, AuditStream("refusing"))

    async def main(gateway: Gateway) -> tuple[list[str], bool]:
        environments = Environments(SandboxProvider(api, prefix="sf"), gateway, apiserver_audit=audit)
        with pytest.raises(OSError, match="audit stream unreachable"):
            await environments.open(scenario(SCENARIO), evaluation="tests/fail", clock=clock, env_id=env_id)
        return await asyncio.to_thread(standing, api, env_id), live(gateway, env_id)

    left, kept = with_gateway(cluster, tmp_path, main)
    assert left == []
    assert kept is False, "the gateway's state of the environment was released"
    assert {"provision", "credentials", "teardown"} <= set(clock.seconds)


class RecordingProvider(SandboxProvider):
    """Keeps the log ids bound when each removal ran."""

    def __init__(self, api: ApiClient, prefix: str) -> None:
        super().__init__(api, prefix=prefix)
        self.ids: list[dict[str, str]] = []

    def teardown(self, env_id: str, wait: bool = True, timeout: float = 120.0) -> TeardownReport:
        self.ids.append(dict(current_ids()))
        return super().teardown(env_id, wait, timeout)


def test_a_background_close_records_its_teardown_when_done(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    clock = PhaseClock()
    queue = BackgroundTeardown()
    options = SessionOptions(dynamics=Dynamics.OFF, stimuli=False)
    provider = RecordingProvider(api, prefix="sb")

    async def main(gateway: Gateway) -> tuple[str, bool, bool, list[str]]:
        environments = Environments(provider, gateway, teardowns=queue)
        session: EnvironmentSession = await environments.open(
            scenario(SCENARIO), evaluation="tests/background", options=options, clock=clock
        )
        await session.close(background=True)
        queued = "teardown" not in clock.seconds and queue.pending == 1
        await queue.drain()
        left = await asyncio.to_thread(standing, api, session.id)
        return session.id, queued, "teardown" in clock.seconds, left

    env_id, queued, recorded, left = with_gateway(cluster, tmp_path, main)
    assert queued, "close(background=True) returns with the removal queued, not done"
    assert recorded, "the removal's time lands on the clock's teardown phase once it is done"
    assert left == []
    assert [ids.get("environment") for ids in provider.ids] == [env_id], (
        "the background removal logs with the environment's id"
    )
