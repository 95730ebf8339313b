"""The `job` adapter's objects are accepted by the real API server as rendered."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator.agents.job import AGENT_POD_LABELS, build_agent_inputs, build_agent_job
from oasis_operator.agents.job_adapter import JobAdapter
from oasis_operator.agents.protocol import AgentOutcome
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
    seen: list[dict[str, Any]] = []  # the Job, then its kubeconfig Secret, as seen while the call runs
    adapter = JobAdapter(api, namespace, JobAgent(image="registry.example/agents/ops:1.0"), name="ops-agent")

    def look() -> None:
        jobs = request(api, "GET", resource_path("Job", namespace))["items"]
        if jobs and len(seen) < 2:
            seen[:] = jobs[:1]
            secrets = request(api, "GET", resource_path("Secret", namespace))["items"]
            seen.extend(
                s for s in secrets if s["metadata"]["name"] == f"{jobs[0]['metadata']['name']}-kubeconfig"
            )

    async def call() -> AgentOutcome:
        task = asyncio.create_task(adapter.run(REQUEST, time_limit=8))
        while len(seen) < 2 and not task.done():
            await asyncio.sleep(0.2)
            await asyncio.to_thread(look)
        return await task

    outcome = asyncio.run(call())
    assert outcome.error_kind == "timeout"
    assert "kubelet" in (outcome.error or "")
    assert len(seen) == 2, seen
    job, secret = seen
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]

    def all_gone() -> bool:
        jobs = request(api, "GET", resource_path("Job", namespace))["items"]
        names = [
            s["metadata"]["name"] for s in request(api, "GET", resource_path("Secret", namespace))["items"]
        ]
        return not jobs and secret["metadata"]["name"] not in names

    wait_for(all_gone, timeout=60, what="the agent Job and (by ownership) its Secret to be deleted")
    identity = asyncio.run(adapter.identity())
    assert identity.identity.name == "ops-agent"
