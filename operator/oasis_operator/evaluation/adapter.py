"""The adapter that talks to an evaluation's agent, built from `spec.agent`."""

from __future__ import annotations

from kubernetes.client import ApiClient

from oasis_operator.agents.adapters import AgentAdapter, CommandAdapter, HttpAdapter
from oasis_operator.agents.job_adapter import JobAdapter
from oasis_operator.agents.sandbox import SandboxUnavailableError, sandbox_policy
from oasis_operator.environments.runtime import OperatorConfig, RuntimeSetupError, read_token
from oasis_operator.models.crd import AgentSpec


def agent_adapter(
    api: ApiClient, namespace: str, agent: AgentSpec, config: OperatorConfig
) -> tuple[AgentAdapter, float]:
    """The adapter for the spec's agent and its per-call time limit."""
    if agent.http is not None:
        token = None
        if agent.http.tokenSecretRef is not None:
            token = read_token(api, namespace, agent.http.tokenSecretRef, "spec.agent.http.tokenSecretRef")
        return HttpAdapter(agent.http.url, token), float(agent.http.timeoutSeconds)
    if agent.command is not None:
        policy = sandbox_policy(agent, config.agent_uid)
        try:
            adapter = CommandAdapter(list(agent.command.command), dict(agent.command.env), agent.name, policy)
        except SandboxUnavailableError as exc:
            raise RuntimeSetupError(
                f"spec.agent.command.isolation: {exc}; the agent is not run unsandboxed unless the spec "
                "says isolation: none"
            ) from exc
        return adapter, float(agent.command.timeoutSeconds)
    if agent.job is not None:
        # Agent Jobs run in the operator's cluster (it has kubelets; the sandbox cluster has none) and
        # reach the sandbox only through the gateway kubeconfig mounted into them.
        agent_namespace = config.agent_namespace or namespace
        job = JobAdapter(api, agent_namespace, agent.job, agent.name, config.agent_service_account)
        return job, float(agent.job.timeoutSeconds)
    raise RuntimeSetupError("spec.agent: set one of http, command or job")
