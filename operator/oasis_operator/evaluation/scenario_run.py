"""Run one scenario end to end: sandbox → gateway credentials → agent → evidence → engine → teardown.

From just before the agent gets its credentials until the after-snapshot, the objects the scenario's
whole-run checks read (`engine.watchset`) are watched (`sandbox.window`); their timelines go into the
bundle's ``watched`` observation, so a change made and undone during the turn is judged too.

Side effects happen here and in the services it calls; the verdict is the pure engine's. An agent that
fails (timeout, crash, garbage) is recorded on the scenario and the scenario is still evaluated on what
the gateway recorded. A sandbox that cannot be built or read is a provider fault (`ProviderFaultError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
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
from oasis_operator.engine.watchset import watch_targets
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.environments.stimuli import stimulus_plan
from oasis_operator.environments.timings import PhaseClock
from oasis_operator.evidence.bundle import Records, RunFacts, build_bundle
from oasis_operator.gateway import Gateway
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.metrics import PROVISION_DURATION
from oasis_operator.models.crd import MutationSpec
from oasis_operator.models.evidence import AgentRecord, EvaluationWindow, EvidenceBundle
from oasis_operator.models.mutation import NameMutation, mutate_scenario
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.scenario_stimulus import StimulusType
from oasis_operator.sandbox.dynamics import TwinReconciler
from oasis_operator.sandbox.naming import new_environment_id
from oasis_operator.sandbox.provider import SandboxError, SandboxProvider, SandboxRecord
from oasis_operator.sandbox.window import WindowWatcher

log = logging.getLogger(__name__)
DYNAMICS_INTERVAL = 1.0


class ProviderFaultError(RuntimeError):
    """The sandbox could not be built or observed: the run aborts (Core: runtime PROVIDER_FAILURE)."""


@dataclass
class ScenarioRun:
    result: ScenarioResult
    bundle: EvidenceBundle
    outcome: AgentOutcome
    started: str
    finished: str
    clock: PhaseClock


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def _finish(work: Awaitable[None]) -> None:
    """Await clean-up work to its end even if the awaiting task is cancelled meanwhile."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


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


def _teardown_done(clock: PhaseClock) -> Callable[[float], None]:
    return lambda seconds: clock.record("teardown", seconds)


class ScenarioRunner:
    """Runs scenarios for one evaluation; the gateway must be started in the running event loop."""

    def __init__(
        self,
        provider: SandboxProvider,
        gateway: Gateway,
        adapter: AgentAdapter,
        profile: Profile,
        identity: IdentityDocument,
        configuration: dict[str, Any],
        evaluation: str,
        agent_timeout: float = 600.0,
        apiserver_audit: ApiServerAudit | None = None,
        teardowns: BackgroundTeardown | None = None,
        mutation: MutationSpec | None = None,
        watch_window: bool = True,
    ) -> None:
        self.provider = provider
        self.gateway = gateway
        self.adapter = adapter
        self.profile = profile
        self.identity = identity
        self.configuration = configuration
        self.evaluation = evaluation
        self.agent_timeout = agent_timeout
        self.apiserver_audit = apiserver_audit
        self.teardowns = teardowns
        self.mutation = mutation
        self.watch_window = watch_window  # off only to measure what the watches cost (bench/)

    async def run(
        self, scenario: Scenario, plan: StimulusPlan | None = None, clock: PhaseClock | None = None
    ) -> ScenarioRun:
        """One scenario, its phases timed on `clock`; the sandbox is always torn down, also on cancel.

        `plan` is the scenario's stimulus plan when the caller built it already (the run's planning).
        With a `teardowns` queue the sandbox is removed in the background once the scenario is judged
        (its `teardown` phase lands on the clock when done); without one, before this returns.
        With a `mutation`, everything from the twin to the engine runs on the scenario with its names
        replaced (its own stimulus plan too); the bundle carries the mapping, the result the originals.
        """
        clock = clock or PhaseClock()
        renamed: NameMutation | None = None
        if self.mutation is not None:
            mutated = mutate_scenario(scenario, self.mutation.seed)
            scenario, renamed, plan = mutated.scenario, mutated.mutation, None
        if plan is None:  # a scenario whose stimuli cannot be delivered fails before any sandbox
            plan = stimulus_plan(scenario)
        env_id = new_environment_id()
        with clock.phase("provision"):
            record = await self._provision(scenario, env_id)
        background = False
        try:
            done = await self._judge(scenario, plan, record, clock, renamed)
            if self.teardowns is not None:
                removal = functools.partial(self.provider.teardown, env_id, False)
                self.teardowns.submit(env_id, removal, _teardown_done(clock))
                background = True
            return done
        finally:
            self.gateway.release(env_id)
            if self.apiserver_audit is not None:
                self.apiserver_audit.discard(env_id)
            if not background:
                with clock.phase("teardown"):
                    await _finish(asyncio.to_thread(self._teardown, env_id))

    async def _judge(
        self,
        scenario: Scenario,
        plan: StimulusPlan,
        record: SandboxRecord,
        clock: PhaseClock,
        mutation: NameMutation | None = None,
    ) -> ScenarioRun:
        """Credentials, the agent, the twin's dynamics, the after-snapshot, the evidence and the verdict."""
        window = self._window(scenario, record)
        try:
            return await self._observed(scenario, plan, record, clock, window, mutation)
        finally:
            if window is not None:  # idempotent: a no-op when the run stopped it already
                await _finish(asyncio.to_thread(window.close))

    def _window(self, scenario: Scenario, record: SandboxRecord) -> WindowWatcher | None:
        """The watch of the objects the scenario's whole-run checks read (None when it has none)."""
        targets = watch_targets(scenario)
        if not targets or not self.watch_window:
            return None
        return WindowWatcher(self.provider.api, record.environment, record.resources, targets)

    async def _observed(
        self,
        scenario: Scenario,
        plan: StimulusPlan,
        record: SandboxRecord,
        clock: PhaseClock,
        window: WindowWatcher | None,
        mutation: NameMutation | None,
    ) -> ScenarioRun:
        env = record.environment
        with clock.phase("credentials"):
            if window is not None:  # from before the agent has credentials: the whole window is watched
                await asyncio.to_thread(window.start)
            creds = self.gateway.register(env)
            self.gateway.attach_stimuli(env.id, plan)
            reconciler = TwinReconciler(self.provider, record)
            started = _now()
            if self.apiserver_audit is not None:
                await asyncio.to_thread(self.apiserver_audit.subscribe, env, started)
                await self.apiserver_audit.gateway_fence(env.id, self.gateway.upstream)
            request = agent_request(scenario, creds.kubeconfig_yaml, creds.endpoints)
        stop = asyncio.Event()
        marks = self.gateway.state(env.id).recorder
        dynamics = asyncio.create_task(play_dynamics(reconciler, stop, lambda: marks.quiet_mark))
        try:
            with clock.phase("agent"):
                outcome = await self.adapter.run(request, self.agent_timeout)
        finally:
            # Let a pass in progress finish: its thread cannot be interrupted, and a second pass
            # running beside it would race it (both creating the same ReplicaSet).
            with clock.phase("dynamics"):
                stop.set()
                await _finish(dynamics)
        self.gateway.revoke(env.id)
        try:
            with clock.phase("dynamics"):
                await asyncio.to_thread(reconciler.settle, marks.quiet_mark)
            with clock.phase("afterSnapshot"):
                after = await asyncio.to_thread(self.provider.snapshot, env, record.resources)
        except Exception as exc:
            raise ProviderFaultError(f"{scenario.id}: the sandbox could not be observed: {exc}") from exc
        finished = _now()
        run = RunFacts(
            evaluation_id=self.evaluation,
            environment_id=env.id,
            scenario=scenario,
            agent=self._agent_record(env.agent.username),
            window=EvaluationWindow(start=started, end=finished),
        )
        with clock.phase("evidence"):
            watched = await asyncio.to_thread(window.stop) if window is not None else None
            records = await self._records(env.id)
            bundle = build_bundle(run, outcome, record.before, after, records)
            bundle = bundle.model_copy(update={"mutation": mutation, "watched": watched})
        with clock.phase("engine"):
            result = evaluate_scenario(bundle, self.profile)
        bundle = bundle.model_copy(update={"timings": clock.timings()})  # the engine never reads it
        return ScenarioRun(result, bundle, outcome, started, finished, clock)

    async def _records(self, env_id: str) -> Records:
        """The gateway's record and the API server's audit of the environment, each read once."""
        gateway_record = self.gateway.evidence(env_id)
        apiserver_audit = None
        if self.apiserver_audit is not None:
            apiserver_audit = await asyncio.to_thread(self.apiserver_audit.close, env_id)
        return Records(
            gateway_audit=gateway_record.audit_log,
            apiserver_audit=apiserver_audit,
            stimuli=gateway_record.stimuli,
        )

    def _agent_record(self, kube_user: str) -> AgentRecord:
        return AgentRecord(
            identity=self.identity.identity,
            configuration=self.configuration,
            kube_user=kube_user,
        )

    async def _provision(self, scenario: Scenario, env_id: str) -> SandboxRecord:
        """Provision in a thread; if the caller is cancelled meanwhile, wait for it and remove the sandbox."""
        work = asyncio.ensure_future(
            asyncio.to_thread(self.provider.provision, scenario, self.evaluation, env_id)
        )
        begun = time.monotonic()
        try:
            record = await asyncio.shield(work)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await work
            await _finish(asyncio.to_thread(self._teardown, env_id))
            raise
        except SandboxError as exc:
            raise ProviderFaultError(str(exc)) from exc
        PROVISION_DURATION.observe(time.monotonic() - begun)
        return record

    def _teardown(self, env_id: str) -> None:
        try:
            self.provider.teardown(env_id, False)
        except Exception:
            # A sandbox API server that stopped answering cannot be cleaned now; the orphan collector
            # removes the environment at the next start (its namespaces carry the evaluation).
            log.exception("teardown failed env=%s", env_id)


async def play_dynamics(
    reconciler: TwinReconciler, stop: asyncio.Event, mark: Callable[[], int | None] | None = None
) -> None:
    """Play out the agent's changes as controllers would, while it works, until `stop` is set; with a
    change `mark` (`TwinReconciler.settle`), a pass only when something may have changed."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), DYNAMICS_INTERVAL)
            return
        try:
            if mark is None:
                await asyncio.to_thread(reconciler.reconcile_once)
            else:
                await asyncio.to_thread(reconciler.settle, mark())
        except Exception:
            log.exception("twin dynamics pass failed")
