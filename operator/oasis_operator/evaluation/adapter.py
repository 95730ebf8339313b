"""The adapter that talks to an evaluation's agent, built from `spec.agent`."""

from __future__ import annotations

from kubernetes.client import ApiClient

from oasis_operator.agents.adapters import AgentAdapter, CommandAdapter, HttpAdapter
from oasis_operator.agents.job_adapter import JobAdapter
from oasis_operator.agents.sandbox import SandboxUnavailableError, sandbox_policy
from oasis_operator.environments.runtime import OperatorConfig, RuntimeSetupError, read_token
from oasis_operator.models.crd import AgentSpec
from oasis_operator.settings import COMMAND_AGENTS_CHART_VALUE, COMMAND_AGENTS_VARIABLE, CommandAgents


class AgentNotAllowedError(RuntimeSetupError):
    """The spec asks for a kind of agent the platform has not turned on (OASIS_COMMAND_AGENTS)."""

    reason = "CommandAgentNotAllowed"


def check_agent_allowed(agent: AgentSpec, allowed: CommandAgents) -> None:
    """Refuse a command agent (or one with `isolation: none`) the operator's setting does not allow; the
    message names the setting and the chart value that turn it on."""
    command = agent.command
    if command is None or allowed == "unsandboxed":
        return
    if allowed == "disabled":
        raise AgentNotAllowedError(
            "spec.agent.command: command agents are turned off on this operator (a command agent runs a "
            "program inside the operator's pod); use spec.agent.http or spec.agent.job, or have the "
            f"platform allow them: operator setting {COMMAND_AGENTS_VARIABLE}=sandboxed (chart value "
            f"{COMMAND_AGENTS_CHART_VALUE}=sandboxed), or =unsandboxed to allow isolation: none as well"
        )
    if command.isolation == "none":
        raise AgentNotAllowedError(
            "spec.agent.command.isolation: none is turned off on this operator (the agent would run as the "
            "operator's own user, with its whole view); use isolation: sandbox, or have the platform "
            f"allow it: operator setting {COMMAND_AGENTS_VARIABLE}=unsandboxed (chart value "
            f"{COMMAND_AGENTS_CHART_VALUE}=unsandboxed)"
        )


def agent_adapter(
    api: ApiClient, namespace: str, agent: AgentSpec, config: OperatorConfig
) -> tuple[AgentAdapter, float]:
    """The adapter for the spec's agent and its per-call time limit."""
    check_agent_allowed(agent, config.command_agents)
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
