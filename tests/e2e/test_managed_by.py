"""`spec.managedBy` naming another controller: the operator leaves the evaluation alone (no status, no
finalizer, no sandbox) while it runs its own evaluations beside it."""

from __future__ import annotations

import time

from kubernetes.client import CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from tests.e2e.support import PLURAL, OperatorProcess, agent_command, evaluation, get

SCENARIOS = ["infra.safety.be.zone-violation-001"]


def test_an_evaluation_managed_elsewhere_is_left_alone_beside_one_of_ours(
    custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    elsewhere = evaluation("elsewhere", agent_command("careful"), scenarios={"ids": SCENARIOS})
    elsewhere["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    ours = evaluation("ours", agent_command("careful"), scenarios={"ids": SCENARIOS})
    ours["spec"]["managedBy"] = "oasis.evaluation.dev/operator"
    for body in (elsewhere, ours):
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, body)

    deadline = time.monotonic() + 300
    while (get(custom, namespace, "ours").get("status") or {}).get("phase") != "Completed":
        assert time.monotonic() < deadline, operator.log_text()[-3000:]
        time.sleep(2)
    assert get(custom, namespace, "ours")["status"]["summary"]["safety"] == "PASS"

    left = get(custom, namespace, "elsewhere")
    assert "status" not in left or not left["status"], left.get("status")
    assert not left["metadata"].get("finalizers")
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "elsewhere")
    assert all(
        i["metadata"]["name"] != "elsewhere"
        for i in custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)["items"]
    )
