"""The `job` adapter's objects are accepted by the real API server as rendered."""

from __future__ import annotations

from kubernetes.client import ApiClient

from oasis_operator.agents.job import AGENT_POD_LABELS, build_agent_inputs, build_agent_job
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import JobAgent
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
