"""Tenant guardrail: which command agents the operator runs (OASIS_COMMAND_AGENTS), in a cluster and out."""

from __future__ import annotations

import pytest
from kubernetes.client import ApiClient

from oasis_operator.environments.runtime import OperatorConfig
from oasis_operator.evaluation.adapter import AgentNotAllowedError, agent_adapter, check_agent_allowed
from oasis_operator.models.crd import AgentSpec, CommandAgent, HttpAgent
from oasis_operator.settings import OperatorSettings, SettingsError

SANDBOXED = AgentSpec(command=CommandAgent(command=["/bin/true"]))
UNSANDBOXED = AgentSpec(command=CommandAgent(command=["/bin/true"], isolation="none"))
HTTP = AgentSpec(http=HttpAgent(url="http://agent.example:8765"))
IN_A_POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}


def test_command_agents_are_refused_in_a_cluster_and_run_outside_one_by_default() -> None:
    assert OperatorSettings.from_env(IN_A_POD).command_agents_allowed == "disabled"
    # Local use (`oasis evaluate`, `make demo`, the tests): no pod, or a kubeconfig given in one.
    assert OperatorSettings.from_env({}).command_agents_allowed == "unsandboxed"
    with_kubeconfig = OperatorSettings.from_env({**IN_A_POD, "KUBECONFIG": "/ci/kubeconfig"})
    assert with_kubeconfig.command_agents_allowed == "unsandboxed"
    assert OperatorConfig.from_settings(OperatorSettings.from_env(IN_A_POD)).command_agents == "disabled"
    assert OperatorConfig().command_agents == "unsandboxed"


def test_the_platform_turns_command_agents_on_with_the_setting() -> None:
    on = OperatorSettings.from_env({**IN_A_POD, "OASIS_COMMAND_AGENTS": "unsandboxed"})
    assert on.command_agents_allowed == "unsandboxed"
    off = OperatorSettings.from_env({"OASIS_COMMAND_AGENTS": "disabled"})
    assert off.command_agents_allowed == "disabled"
    with pytest.raises(SettingsError, match=r"^OASIS_COMMAND_AGENTS: 'yes' is not usable; set it to one of"):
        OperatorSettings.from_env({"OASIS_COMMAND_AGENTS": "yes"})


def test_disabled_refuses_every_command_agent_naming_the_setting_and_the_chart_value() -> None:
    for agent in (SANDBOXED, UNSANDBOXED):
        with pytest.raises(AgentNotAllowedError) as exc:
            check_agent_allowed(agent, "disabled")
        message = str(exc.value)
        assert message.startswith("spec.agent.command: command agents are turned off on this operator")
        assert "OASIS_COMMAND_AGENTS=sandboxed" in message
        assert "tenancy.commandAgents=sandboxed" in message
        assert exc.value.reason == "CommandAgentNotAllowed"
    check_agent_allowed(HTTP, "disabled")  # other agents are not its business


def test_sandboxed_refuses_only_isolation_none() -> None:
    check_agent_allowed(SANDBOXED, "sandboxed")
    with pytest.raises(AgentNotAllowedError) as exc:
        check_agent_allowed(UNSANDBOXED, "sandboxed")
    message = str(exc.value)
    assert message.startswith("spec.agent.command.isolation: none is turned off on this operator")
    assert "OASIS_COMMAND_AGENTS=unsandboxed" in message
    assert "tenancy.commandAgents=unsandboxed" in message
    check_agent_allowed(UNSANDBOXED, "unsandboxed")


def test_no_adapter_is_built_for_an_agent_the_setting_refuses() -> None:
    with pytest.raises(AgentNotAllowedError, match=r"tenancy\.commandAgents"):
        agent_adapter(ApiClient(), "ns", UNSANDBOXED, OperatorConfig(command_agents="disabled"))
