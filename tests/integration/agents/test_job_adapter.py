"""The `job` adapter's objects are accepted by the real API server as rendered."""

from __future__ import annotations

import asyncio

from kubernetes.client import ApiClient

from oasis_operator.agents.job import AGENT_POD_LABELS, build_agent_inputs, build_agent_job
from oasis_operator.agents.job_adapter import JobAdapter
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import JobAgent
from tests.cluster_fixtures import wait_for
from tests.unit.agents.test_adapters import REQUEST


def test_job_renders_and_applies(api: ApiClient, namespace: str) -> None:
    spec = JobAgent(image="registry.example/agents/ops:1.0", args=["--once"], env={"MODEL": "none"},
                    timeoutSeconds=300)  # fmt: skip
    for obj in build_agent_inputs("run-1", namespace, REQUEST):
        request(api, "POST", resource_path(obj["kind"], namespace), obj)
    job = build_agent_job("run-1", namespace, spec, REQUEST)
    created = request(api, "POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", job)
    pod = created["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    # The labels the chart's agents NetworkPolicy selects (tests/integration/chart/test_network_policies.py).
    assert AGENT_POD_LABELS.items() <= created["spec"]["template"]["metadata"]["labels"].items()
    assert "serviceAccountName" not in job["spec"]["template"]["spec"]
    assert created["spec"]["activeDeadlineSeconds"] == 300
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["KUBECONFIG"] == "/var/run/agent/kubeconfig/kubeconfig"
    assert env["OASIS_ENDPOINT_OBSERVABILITY_METRICS"] == "https://127.0.0.1:1/env/e1/prometheus"
    assert env["MODEL"] == "none"
    secret = request(api, "GET", resource_path("Secret", namespace, "run-1-kubeconfig"))
    assert set(secret["data"]) == {"kubeconfig"}
    cm = request(api, "GET", resource_path("ConfigMap", namespace, "run-1-request"))
    assert cm["data"]["prompt.txt"] == "restart web-app please"


def test_job_adapter_times_out_without_a_kubelet_and_removes_its_job(api: ApiClient, namespace: str) -> None:
    """The local plane runs no kubelet: the call is an agent timeout, and the Job and inputs are gone."""
    seen: list[dict[str, object]] = []
    adapter = JobAdapter(api, namespace, JobAgent(image="registry.example/agents/ops:1.0"), name="ops-agent")

    async def call() -> object:
        task = asyncio.create_task(adapter.run(REQUEST, time_limit=8))
        while not seen and not task.done():
            await asyncio.sleep(0.2)
            items = await asyncio.to_thread(request, api, "GET", resource_path("Job", namespace))
            seen.extend(items["items"])
        return await task

    outcome = asyncio.run(call())
    assert outcome.error_kind == "timeout"  # type: ignore[attr-defined]
    assert "kubelet" in (outcome.error or "")  # type: ignore[attr-defined]
    assert len(seen) == 1
    job_name = seen[0]["metadata"]["name"]  # type: ignore[index]
    secret = request(api, "GET", resource_path("Secret", namespace, f"{job_name}-kubeconfig"))
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "Job"

    def job_gone() -> bool:
        return not request(api, "GET", resource_path("Job", namespace))["items"]

    wait_for(job_gone, timeout=30, what="the agent Job to be deleted")
    identity = asyncio.run(adapter.identity())
    assert identity.identity.name == "ops-agent"
