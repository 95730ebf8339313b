"""The `job` adapter: each agent call is a Job in the agent namespace of the operator's cluster.

The Job's inputs (the gateway kubeconfig, the request) are a Secret and a ConfigMap owned by the Job, so
they go when the Job goes. The agent's answer is the JSON its container prints on stdout, read from the
pod's log once the Job has finished. A Job that does not finish within the time limit (or no kubelet
ever runs it, as on the local control plane) is deleted and the call ends as an agent timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from oasis_operator.agents.adapters import MAX_ANSWER, fault, parse_response, protocol_error_text
from oasis_operator.agents.job import build_agent_inputs, build_agent_job
from oasis_operator.agents.protocol import (
    AgentOutcome,
    AgentRequest,
    IdentityDocument,
)
from oasis_operator.kube import request, resource_path
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.crd import JobAgent

POLL_SECONDS = 2.0
FOREGROUND = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}


def job_state(job: dict[str, Any]) -> str | None:
    """'Complete' or 'Failed' once the Job has finished, else None."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


class JobAdapter:
    """Runs an agent image once per scenario; needs a kubelet in the cluster that runs the Job."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        spec: JobAgent,
        name: str | None = None,
        service_account: str | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.spec = spec
        self.name = name
        self.service_account = service_account

    async def identity(self) -> IdentityDocument:
        """A Job cannot be asked cheaply; the spec's name (or the image) stands in, with profile defaults."""
        return IdentityDocument(identity=AgentIdentity(name=self.name or self.spec.image))

    async def run(self, agent_request: AgentRequest, time_limit: float) -> AgentOutcome:
        name = f"oasis-agent-{secrets.token_hex(5)}"
        started = time.monotonic()
        try:
            await asyncio.to_thread(self._create, name, agent_request)
        except ApiException as exc:
            return fault("transport", f"could not create the agent Job: {exc.reason}", 0.0)
        try:
            while time.monotonic() - started < time_limit:
                job = await asyncio.to_thread(
                    request, self.api, "GET", resource_path("Job", self.namespace, name)
                )
                state = job_state(job)
                if state is not None:
                    return await asyncio.to_thread(self._outcome, name, state, time.monotonic() - started)
                await asyncio.sleep(POLL_SECONDS)
            return fault(
                "timeout",
                f"the agent Job did not finish within {time_limit:.0f}s (is a kubelet running it?)",
                time.monotonic() - started,
            )
        finally:
            with contextlib.suppress(ApiException):
                await asyncio.to_thread(
                    request, self.api, "DELETE", resource_path("Job", self.namespace, name), FOREGROUND
                )

    def _create(self, name: str, agent_request: AgentRequest) -> None:
        job = build_agent_job(name, self.namespace, self.spec, agent_request, self.service_account)
        created = request(self.api, "POST", resource_path("Job", self.namespace), job)
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": created["metadata"]["uid"],
            "blockOwnerDeletion": False,
        }
        for body in build_agent_inputs(name, self.namespace, agent_request):
            body["metadata"]["ownerReferences"] = [owner]
            request(self.api, "POST", resource_path(body["kind"], self.namespace), body)

    def _outcome(self, name: str, state: str, seconds: float) -> AgentOutcome:
        query = {"labelSelector": f"job-name={name}"}
        pods = request(self.api, "GET", resource_path("Pod", self.namespace), query=query)["items"]
        if not pods:
            return fault("exit", f"the agent Job is {state} but has no pod", seconds)
        path = resource_path("Pod", self.namespace, pods[0]["metadata"]["name"]) + "/log"
        try:
            log = _raw(self.api, path, {"limitBytes": str(MAX_ANSWER + 1)})
        except ApiException as exc:
            return fault("transport", f"could not read the agent's log: {exc.reason}", 0.0)
        if state == "Failed":
            return fault("exit", "the agent Job failed", seconds, log[-2000:].decode("utf-8", "replace"))
        if len(log) > MAX_ANSWER:
            return fault(
                "protocol",
                f"the agent's answer is not valid: it exceeds the {MAX_ANSWER}-byte bound",
                seconds,
            )
        try:
            return AgentOutcome(response=parse_response(log), seconds=seconds)
        except (ValidationError, ValueError) as exc:
            return fault("protocol", protocol_error_text(exc), seconds)


def _raw(api: ApiClient, path: str, query: dict[str, str] | None = None) -> bytes:
    """A text resource (pod logs) as the server sent it, with the client's credentials."""
    method, url, headers, body, post = api.param_serialize(
        method="GET",
        resource_path=path,
        query_params=list((query or {}).items()),
        # The API server answers a log in text/plain but refuses (406) an Accept of text/plain alone, as a
        # real kubelet's log showed; kubectl asks for `application/json, */*`.
        header_params={"Accept": "text/plain, */*"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(
        method, url, header_params=headers, body=body, post_params=post, _request_timeout=30
    )
    data = response.read()  # type: ignore[no-untyped-call]
    if response.status >= 400:
        raise ApiException(status=response.status, reason=response.reason)
    return bytes(data)
