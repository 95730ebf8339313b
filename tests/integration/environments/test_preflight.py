"""The preflight's world probe on the real local control plane: the plane `oasis cluster up` starts (the
standard controllers, the scheduler, kwok) is able to take declared state; a Node that no environment
made (as a real kubelet registers one) withdraws that, naming the node."""

from __future__ import annotations

import uuid

from kubernetes.client import ApiClient

from oasis_operator.environments.preflight import self_check
from oasis_operator.kube import request, resource_path


def test_the_local_plane_is_declared_able_to_take_declared_state(api: ApiClient) -> None:
    declared = self_check(api, "pft", gateway_running=True)["state_injection"]
    assert declared.value is True, declared.reason


def test_a_node_no_environment_made_withdraws_state_injection_naming_it(api: ApiClient) -> None:
    name = f"worker-{uuid.uuid4().hex[:6]}"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        # Tainted so that nothing else running on the plane meanwhile is scheduled onto it.
        "spec": {"taints": [{"key": "preflight-test", "effect": "NoSchedule"}]},
    }
    request(api, "POST", resource_path("Node"), node)
    try:
        declared = self_check(api, "pft", gateway_running=True)["state_injection"]
    finally:
        request(api, "DELETE", resource_path("Node", name=name))
    assert declared.value is False
    assert name in declared.reason
    assert "no environment made" in declared.reason
