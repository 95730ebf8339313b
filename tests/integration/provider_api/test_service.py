"""The provider API's service on environment sessions, against the real local control plane.

The runner's sequence, called on `ProviderService` directly (no HTTP, no operator): a door, provision,
the agent's request through the door, state-snapshot, observe (audit_log, resource_state, state_diff),
inject-state, teardown; then the door's token reaches nothing. The wire answers are the ones the e2e test
(tests/e2e/test_provider_api.py) checks through the operator.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.gateway import Gateway
from oasis_operator.kube import request, resource_path
from oasis_operator.provider_api.service import ProviderService
from oasis_operator.provider_api.wire import InjectBody, ObserveBody, ProvisionBody, SnapshotBody, WireError
from oasis_operator.sandbox.provider import SandboxProvider
from tests.cluster_fixtures import Cluster
from tests.unit.sandbox.test_twin import profile, scenario

SCENARIO = "infra.safety.be.zone-violation-001"
DOOR = "oasis-agent"


def through_door(kubeconfig: str, namespace: str) -> int:
    """The status of a list of deployments in `namespace` with the door's kubeconfig."""
    client = kube_config.new_client_from_config_dict(yaml.safe_load(kubeconfig))
    try:
        request(client, "GET", resource_path("Deployment", namespace), timeout=30)
    except ApiException as exc:
        return int(exc.status)
    finally:
        client.close()
    return 200


def test_the_runner_sequence_on_the_provider_service(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    declared = scenario(SCENARIO).preconditions
    body = ProvisionBody.model_validate(
        {"scenario_id": SCENARIO, "environment": {"type": declared.environment.type},
         "agent": {"principal": DOOR}}
    )  # fmt: skip

    async def main() -> dict[str, Any]:
        gateway = Gateway(cluster.kubeconfig, tmp_path / "gateway")
        await gateway.start()
        service = ProviderService(SandboxProvider(api, prefix="pa"), gateway, profile(), api)
        seen: dict[str, Any] = {}
        try:
            door = service.open_door(DOOR)
            seen["provisioned"] = provisioned = await service.provision(body)
            env_id = provisioned["environment_id"]
            with pytest.raises(WireError) as busy:
                await service.provision(body)
            seen["busy"] = (busy.value.status, busy.value.field)
            seen["agent"] = await asyncio.to_thread(through_door, door, "frontend")
            seen["snapshot"] = await service.snapshot(SnapshotBody(environment_id=env_id))
            seen["audit"] = await service.observe(
                ObserveBody(environment_id=env_id, observation_type="audit_log")
            )
            parameters = {"kind": "deployment", "name": "checkout-api", "namespace": "payments"}
            seen["state"] = await service.observe(
                ObserveBody(environment_id=env_id, observation_type="resource_state", parameters=parameters)
            )
            seen["diff"] = await service.observe(
                ObserveBody(environment_id=env_id, observation_type="state_diff")
            )
            injected = {
                "kind": "configmap",
                "name": "feature-flags",
                "namespace": "frontend",
                "data": {"a": "1"},
            }
            seen["applied"] = await service.inject_state(InjectBody(environment_id=env_id, state=[injected]))
            cm = {"kind": "ConfigMap", "name": "feature-flags", "namespace": "frontend"}
            seen["cm"] = await service.observe(
                ObserveBody(environment_id=env_id, observation_type="resource_state", parameters=cm)
            )
            seen["diff_after_inject"] = await service.observe(
                ObserveBody(environment_id=env_id, observation_type="state_diff")
            )
            seen["gone"] = await service.teardown(env_id)
            with pytest.raises(WireError) as again:
                await service.teardown(env_id)
            seen["again"] = (again.value.status, again.value.field)
            seen["after"] = await asyncio.to_thread(through_door, door, "frontend")
            seen["reprovisioned"] = await service.provision(body)  # the door serves one at a time, again
        finally:
            await service.close()
            await gateway.stop()
        seen["left"] = dict(service.environments)
        return seen

    seen = asyncio.run(main())
    provisioned = seen["provisioned"]
    assert provisioned["status"] == "ready"
    assert provisioned["agent_credentials"]["principal"] == DOOR
    assert seen["busy"] == (409, "agent.principal")
    assert seen["agent"] == 200, "the door reaches the environment it serves"
    kinds = {(r["kind"], r["name"]) for r in seen["snapshot"]["resources"]}
    assert ("Deployment", "checkout-api") in kinds
    audit = seen["audit"]
    assert audit["evidence_source"] == {"type": "gateway_audit", "status": "available"}
    assert audit["data"]["agent_principal"] == DOOR
    assert [e["user"] for e in audit["data"]["entries"]] == [DOOR]
    state = seen["state"]
    assert state["evidence_source"]["status"] == "available", state
    assert state["data"]["spec"]["replicas"] == 2
    assert seen["diff"]["data"]["changes"] == []
    assert seen["applied"] == {
        "status": "applied",
        "created": ["ConfigMap frontend/feature-flags"],
        "patched": [],
    }
    assert seen["cm"]["data"]["data"] == {"a": "1"}, seen["cm"]
    assert seen["diff_after_inject"]["data"]["changes"] == [], "what was injected is the new baseline"
    assert seen["gone"] == {"status": "destroyed"}
    assert seen["again"] == (404, "environment_id")
    assert seen["after"] == 401, "after teardown the door's token reaches nothing"
    assert seen["reprovisioned"]["status"] == "ready"
    assert seen["left"] == {}, "closing the service tears down what is still provisioned"
