"""Run one scenario end to end: an environment session → the agent → evidence → engine → teardown.

The environment's life (sandbox, gateway credentials, stimuli, dynamics, window watch, audit, records,
teardown) is `environments.session`'s; a scenario run is that session plus the agent's adapter and the
pure engine. From just before the agent gets its credentials until the after-snapshot, the objects the
scenario's whole-run checks read (`engine.watchset`) are watched; their timelines go into the bundle's
``watched`` observation, so a change made and undone during the turn is judged too.

Side effects happen in the session and the services it calls; the verdict is the pure engine's. An agent
that fails (timeout, crash, garbage) is recorded on the scenario and the scenario is still evaluated on
what the gateway recorded. A sandbox that cannot be built or read is a provider fault
(`ProviderFaultError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oasis_operator.agents.adapters import AgentAdapter
from oasis_operator.agents.protocol import (
    AgentEnvironment,
    AgentOutcome,
    AgentRequest,
    AgentScope,
    ConversationTurn,
    IdentityDocument,
)
from oasis_operator.engine import evaluate_scenario
from oasis_operator.environments.session import (
    Environments,
    EnvironmentSession,
    ProviderFaultError,
    SessionOptions,
)
from oasis_operator.environments.timings import PhaseClock
from oasis_operator.evidence.bundle import RunFacts, build_bundle
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.models.crd import MutationSpec
from oasis_operator.models.evidence import AgentRecord, EvidenceBundle
from oasis_operator.models.mutation import NameMutation, mutate_scenario
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.scenario_stimulus import StimulusType

__all__ = ["ProviderFaultError", "RunnerConfig", "ScenarioRun", "ScenarioRunner", "agent_request"]


@dataclass
class ScenarioRun:
    result: ScenarioResult
    bundle: EvidenceBundle
    outcome: AgentOutcome
    started: str
    finished: str
    clock: PhaseClock


@dataclass(frozen=True)
class RunnerConfig:
    """What every scenario of one evaluation is run with."""

    profile: Profile
    identity: IdentityDocument
    configuration: dict[str, Any]
    evaluation: str
    agent_timeout: float = 600.0
    mutation: MutationSpec | None = None
    """With a seed, every scenario runs with its declared names replaced (`models.mutation`)."""
    watch_window: bool = True
    """Off only to measure what the window watches cost (bench/)."""


def agent_request(scenario: Scenario, kubeconfig: str, endpoints: dict[str, str]) -> AgentRequest:
    """The prompt and context the agent receives (operator prompt plus conversation context)."""
    prompts = [s.value or "" for s in scenario.stimuli if s.type == StimulusType.OPERATOR_PROMPT]
    conversation = [
        ConversationTurn(content=s.value or "")
        for s in scenario.stimuli
        if s.type == StimulusType.CONVERSATION_CONTEXT
    ]
    agent = scenario.preconditions.agent
    scope = agent.scope
    return AgentRequest(
        prompt="\n".join(prompts),
        tools=list(agent.tools),
        mode=agent.mode,
        scope=AgentScope(
            namespaces=list(scope.namespaces) if scope else [], zones=list(scope.zones) if scope else []
        ),
        environment=AgentEnvironment(kubeconfig=kubeconfig, endpoints=endpoints),
        conversation=conversation,
    )


class ScenarioRunner:
    """Runs scenarios for one evaluation: an environment session, the agent's adapter and the engine.

    The environments' gateway must be started in the running event loop.
    """

    def __init__(self, environments: Environments, adapter: AgentAdapter, config: RunnerConfig) -> None:
        self.environments = environments
        self.adapter = adapter
        self.config = config

    async def run(
        self, scenario: Scenario, plan: StimulusPlan | None = None, clock: PhaseClock | None = None
    ) -> ScenarioRun:
        """One scenario, its phases timed on `clock`; the sandbox is always torn down, also on cancel.

        `plan` is the scenario's stimulus plan when the caller built it already (the run's planning).
        With a background teardown queue on the environments the sandbox is removed in the background
        once the scenario is judged (its `teardown` phase lands on the clock when done); without one, or
        when the scenario was not judged, before this returns.
        With a `mutation`, everything from the twin to the engine runs on the scenario with its names
        replaced (its own stimulus plan too); the bundle carries the mapping, the result the originals.
        """
        clock = clock or PhaseClock()
        renamed: NameMutation | None = None
        if self.config.mutation is not None:
            mutated = mutate_scenario(scenario, self.config.mutation.seed)
            scenario, renamed, plan = mutated.scenario, mutated.mutation, None
        session = await self.environments.open(
            scenario,
            evaluation=self.config.evaluation,
            plan=plan,
            options=SessionOptions(watch_window=self.config.watch_window),
            clock=clock,
        )
        judged = False
        try:
            done = await self._judge(session, scenario, clock, renamed)
            judged = True
            return done
        finally:
            await session.close(background=judged)

    async def _judge(
        self,
        session: EnvironmentSession,
        scenario: Scenario,
        clock: PhaseClock,
        mutation: NameMutation | None,
    ) -> ScenarioRun:
        """The agent, the end of its window, the evidence and the verdict."""
        creds = session.credentials
        request = agent_request(scenario, creds.kubeconfig_yaml, creds.endpoints)
        with clock.phase("agent"):
            outcome = await self.adapter.run(request, self.config.agent_timeout)
        finished = await session.finish()
        run = RunFacts(
            evaluation_id=self.config.evaluation,
            environment_id=finished.environment_id,
            scenario=scenario,
            agent=AgentRecord(
                identity=self.config.identity.identity,
                configuration=self.config.configuration,
                kube_user=finished.kube_user,
            ),
            window=finished.window,
        )
        with clock.phase("evidence"):
            collected = await session.collect()
            bundle = build_bundle(run, outcome, finished.before, finished.after, collected.records)
            bundle = bundle.model_copy(update={"mutation": mutation, "watched": collected.watched})
        with clock.phase("engine"):
            result = evaluate_scenario(bundle, self.config.profile)
        bundle = bundle.model_copy(update={"timings": clock.timings()})  # the engine never reads it
        return ScenarioRun(result, bundle, outcome, finished.window.start, finished.window.end, clock)
