"""One sandbox environment's life, the same for every caller (evaluations, the provider API, containment).

`Environments` is bound to one sandbox target (its provider, its gateway, optionally the API server's
audit and a background teardown queue); `await environments.open(scenario, evaluation=...)` gives an
`EnvironmentSession` whose life is:

1. **open** — provision the sandbox (phase `provision`; `environments.provisioning`: a `SandboxError` is a
   `ProviderFaultError`, and a caller cancelled meanwhile still gets the sandbox removed); then (phase
   `credentials`) start the window watch of the objects the scenario's whole-run checks read
   (`engine.watchset`, `sandbox.window`), register the environment with the gateway (a fresh token, or a
   door's stable one), arm its stimuli, subscribe the API server's audit and send the gateway's fence, and
   start the twin's dynamics (`environments.dynamics`). The agent's credentials are then
   `session.credentials`. If anything after the provisioning fails, the session is closed before `open`
   raises.
2. **finish** — once the agent is done: stop the dynamics (a pass in progress finishes; phase
   `dynamics`), revoke the token, settle the twin (phase `dynamics`), take the after-snapshot (phase
   `afterSnapshot`; a fault is a `ProviderFaultError`). Then **collect** reads the records once: the
   window's timelines, the gateway's record and the API server's audit. The caller times `collect`
   (phase `evidence`) together with what it builds from it (the bundle), so the phase is observed once.
3. **close** — always, also on error or cancel: stop what still runs, release the gateway's state, discard
   the audit subscription, and remove the sandbox now (phase `teardown`; a failure is logged, never
   raised: the orphan collector finds what is left) or, with `background=True` and a queue, in the
   background (its `teardown` phase lands on the clock when done). `teardown` is the same but raises and
   returns the provider's report (the provider API answers with it).

Phases are timed on the caller's `PhaseClock`; without one nothing is timed. Every step logs with the
environment's id bound (`logs.log_context`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from oasis_operator.engine.watchset import watch_targets
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.environments.dynamics import Dynamics, TwinDynamics, finish_anyway
from oasis_operator.environments.provisioning import ProviderFaultError, provision, remove
from oasis_operator.environments.stimuli import stimulus_plan
from oasis_operator.environments.timings import PhaseClock
from oasis_operator.evidence.bundle import Records
from oasis_operator.gateway import Gateway
from oasis_operator.gateway.credentials import AgentCredentials
from oasis_operator.gateway.recorder import GatewayRecord
from oasis_operator.gateway.stimuli import StimulusPlan
from oasis_operator.logs import log_context
from oasis_operator.models.declared_parse import ParsedState
from oasis_operator.models.environment import FixtureEntry
from oasis_operator.models.evidence import EvaluationWindow
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.window import WindowObservation
from oasis_operator.sandbox.naming import new_environment_id
from oasis_operator.sandbox.observe import declared_resources
from oasis_operator.sandbox.provider import SandboxProvider, SandboxRecord
from oasis_operator.sandbox.snapshot import ResourceSnapshot
from oasis_operator.sandbox.teardown import TeardownReport
from oasis_operator.sandbox.twin import TwinPlan
from oasis_operator.sandbox.window import WindowWatcher
from oasis_operator.sandbox.world_watch import WorldWatch

__all__ = [
    "Collected",
    "EnvironmentSession",
    "Environments",
    "Finished",
    "ProviderFaultError",
    "SessionOptions",
]
T = TypeVar("T")


@dataclass(frozen=True)
class SessionOptions:
    """How much of the life a caller wants (an evaluation wants all of it, the default)."""

    watch_window: bool = True
    """Watch the objects the scenario's whole-run checks read (off only to measure what it costs)."""
    dynamics: Dynamics = Dynamics.ON_CHANGE
    """When the twin's controllers are played while the agent works (`environments.dynamics`)."""
    stimuli: bool = True
    """Arm the scenario's stimuli at the gateway (its plan is built when the caller gives none)."""
    audit: bool = True
    """Subscribe the API server's audit, when the factory has one."""
    token: str | None = None
    """A stable token (a provider-API door's) moved to this environment instead of a fresh one."""


@dataclass(frozen=True)
class Finished:
    """What `EnvironmentSession.finish` observed: the snapshots and the window the agent worked in."""

    environment_id: str
    kube_user: str
    before: list[ResourceSnapshot]
    after: list[ResourceSnapshot]
    window: EvaluationWindow


@dataclass(frozen=True)
class Collected:
    """What the independent recorders kept, read once (`EnvironmentSession.collect`)."""

    records: Records
    watched: WindowObservation | None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@contextlib.contextmanager
def _phase(clock: PhaseClock | None, name: str) -> Iterator[None]:
    if clock is None:
        yield
        return
    with clock.phase(name):
        yield


class Environments:
    """Opens environment sessions on one sandbox target; the gateway runs in the running event loop."""

    def __init__(
        self,
        provider: SandboxProvider,
        gateway: Gateway,
        *,
        apiserver_audit: ApiServerAudit | None = None,
        teardowns: BackgroundTeardown | None = None,
    ) -> None:
        self.provider = provider
        self.gateway = gateway
        self.apiserver_audit = apiserver_audit
        self.teardowns = teardowns

    async def open(
        self,
        scenario: Scenario,
        *,
        evaluation: str,
        plan: StimulusPlan | None = None,
        options: SessionOptions | None = None,
        clock: PhaseClock | None = None,
        env_id: str | None = None,
    ) -> EnvironmentSession:
        """A provisioned environment with its credentials issued, stimuli armed and window observed.

        `plan` is the scenario's stimulus plan when the caller built it already; without one it is built
        here, before any sandbox (a scenario whose stimuli cannot be delivered raises StimulusFactsError).
        If anything after the provisioning fails (or the caller is cancelled), the sandbox is removed
        before this raises.
        """
        options = options or SessionOptions()
        if options.stimuli and plan is None:
            plan = stimulus_plan(scenario)
        env_id = env_id or new_environment_id()
        with log_context(environment=env_id):
            with _phase(clock, "provision"):
                record = await provision(self.provider, scenario, evaluation, env_id)
            session = EnvironmentSession(self, scenario, record, options, clock)
            try:
                with _phase(clock, "credentials"):
                    await session._begin(plan)
            except BaseException:
                await session.close()
                raise
            return session


class EnvironmentSession:
    """One provisioned environment, from its credentials to its removal (see the module docstring)."""

    def __init__(
        self,
        owner: Environments,
        scenario: Scenario,
        record: SandboxRecord,
        options: SessionOptions,
        clock: PhaseClock | None,
    ) -> None:
        self._owner = owner
        self.scenario = scenario
        self.record = record
        self.options = options
        self.clock = clock
        self.id = record.environment.id
        self._credentials: AgentCredentials | None = None
        self.started = ""
        self._window: WindowWatcher | None = None
        self._dynamics: TwinDynamics | None = None
        self._collected = False
        self._wound_down = False
        self._closed = False

    async def __aenter__(self) -> EnvironmentSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def credentials(self) -> AgentCredentials:
        """The agent's kubeconfig, token and endpoints for this environment."""
        if self._credentials is None:
            raise RuntimeError(f"environment {self.id} has no credentials yet (open it with Environments)")
        return self._credentials

    def _watcher(self) -> WindowWatcher | None:
        """The watch of the objects the scenario's whole-run checks read (None when it has none)."""
        targets = watch_targets(self.scenario)
        if not targets or not self.options.watch_window:
            return None
        provider = self._owner.provider
        return WindowWatcher(provider.api, self.record.environment, self.record.resources, targets)

    def _audit(self) -> ApiServerAudit | None:
        return self._owner.apiserver_audit if self.options.audit else None

    async def _begin(self, plan: StimulusPlan | None) -> None:
        """Credentials, stimuli, audit subscription, dynamics: from here the agent may act."""
        gateway, env = self._owner.gateway, self.record.environment
        self._window = self._watcher()
        if self._window is not None:  # from before the agent has credentials: the whole window is watched
            await asyncio.to_thread(self._window.start)
        self._credentials = gateway.register(env, token=self.options.token)
        if plan is not None:
            gateway.attach_stimuli(env.id, plan)
        reconciler = WorldWatch(self._owner.provider, self.record)
        marks = gateway.state(env.id).recorder
        self._dynamics = TwinDynamics(reconciler, self.options.dynamics, lambda: marks.quiet_mark)
        self.started = _now()
        audit = self._audit()
        if audit is not None:
            await asyncio.to_thread(audit.subscribe, env, self.started)
            await audit.gateway_fence(env.id, gateway.upstream)
        self._dynamics.start()

    async def _stop_dynamics(self) -> None:
        """Stop the passes (timed as `dynamics` when they ran); a pass in progress finishes first."""
        if self._dynamics is None or not self._dynamics.running:
            return
        with _phase(self.clock, "dynamics"):
            await self._dynamics.stop()

    # ---- the end of the agent's window ---------------------------------------------------------------
    async def finish(self) -> Finished:
        """Stop the dynamics, revoke, settle the twin, take the after-snapshot (fault: ProviderFaultError)."""
        with log_context(environment=self.id):
            await self._stop_dynamics()
            self._owner.gateway.revoke(self.id)
            try:
                with _phase(self.clock, "dynamics"):
                    if self._dynamics is not None and self._dynamics.mode is not Dynamics.OFF:
                        await asyncio.to_thread(self._dynamics.settle)
                with _phase(self.clock, "afterSnapshot"):
                    after = await self.snapshot()
            except Exception as exc:
                raise ProviderFaultError(
                    f"{self.scenario.id}: the sandbox could not be observed: {exc}"
                ) from exc
            env = self.record.environment
            return Finished(
                environment_id=self.id,
                kube_user=env.agent.username,
                before=self.record.before,
                after=after,
                window=EvaluationWindow(start=self.started, end=_now()),
            )

    async def collect(self) -> Collected:
        """The window's timelines, the gateway's record and the API server's audit, each read once."""
        if self._collected:
            raise RuntimeError(f"environment {self.id}: its records were collected already (read once)")
        self._collected = True
        with log_context(environment=self.id):
            watched = await asyncio.to_thread(self._window.stop) if self._window is not None else None
            gateway_record = self._owner.gateway.evidence(self.id)
            apiserver_audit = None
            audit = self._audit()
            if audit is not None:
                apiserver_audit = await asyncio.to_thread(audit.close, self.id)
            records = Records(
                gateway_audit=gateway_record.audit_log,
                apiserver_audit=apiserver_audit,
                stimuli=gateway_record.stimuli,
            )
            return Collected(records=records, watched=watched)

    # ---- a live environment (the provider API) -----------------------------------------------------
    async def snapshot(self) -> list[ResourceSnapshot]:
        """The environment's resources as they are now (raises what reading the sandbox raises)."""
        provider, env = self._owner.provider, self.record.environment
        with log_context(environment=self.id):
            return await asyncio.to_thread(provider.snapshot, env, self.record.resources)

    def gateway_record(self) -> GatewayRecord:
        """The gateway's record of the environment so far."""
        return self._owner.gateway.evidence(self.id)

    async def apply(self, work: Callable[[SandboxProvider], T]) -> T:
        """Run `work` against the environment's sandbox in a thread (more declared state written in)."""
        with log_context(environment=self.id):
            return await asyncio.to_thread(work, self._owner.provider)

    async def grow(
        self,
        scenario: Scenario,
        plan: TwinPlan,
        fixtures: list[FixtureEntry],
        parsed: ParsedState | None = None,
    ) -> None:
        """The environment now holds `scenario`'s twin `plan`: its new resources join the record (their
        state now is their baseline, like what was provisioned), `parsed` (the grown state as parsed) is
        the record's parse for the next consumer, and `fixtures` replace the gateway's entries of the same
        kind and name."""
        with log_context(environment=self.id):
            self.scenario = scenario
            record = self.record
            known = {(r.kind, r.namespace, r.name) for r in record.resources}
            grown = declared_resources(plan, record.environment)
            added = [r for r in grown if (r.kind, r.namespace, r.name) not in known]
            keys = {(r.kind, r.namespace, r.name) for r in added}
            provider = self._owner.provider
            taken = await asyncio.to_thread(provider.snapshot, record.environment, added) if added else []
            before = [s for s in taken if (s.kind, s.namespace, s.name) in keys]
            self.record = record.model_copy(
                update={
                    "resources": [*record.resources, *added],
                    "before": [*record.before, *before],
                    "parsed": parsed,
                }
            )
            state = self._owner.gateway.state(self.id)
            entries = list(state.fixtures)
            for entry in fixtures:
                entries = [f for f in entries if (f.kind, f.name) != (entry.kind, entry.name)] + [entry]
            state.fixtures = entries

    # ---- the end ------------------------------------------------------------------------------------
    async def _wind_down(self) -> None:
        """Stop what still runs (dynamics, window), release the gateway's state, discard the audit (once)."""
        if self._wound_down:
            return
        self._wound_down = True
        try:
            try:
                await self._stop_dynamics()
            finally:
                if self._window is not None:  # idempotent: a no-op when `collect` stopped it already
                    await finish_anyway(asyncio.to_thread(self._window.close))
        finally:
            self._owner.gateway.release(self.id)
            audit = self._audit()
            if audit is not None:
                audit.discard(self.id)

    async def close(self, background: bool = False) -> None:
        """Wind down and remove the sandbox: now (errors logged, never raised) or, with `background` and
        a queue, in the background (its `teardown` phase recorded on the clock when done). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with log_context(environment=self.id):
            try:
                await self._wind_down()
            finally:
                owner, clock = self._owner, self.clock
                if background and owner.teardowns is not None:
                    removal = functools.partial(owner.provider.teardown, self.id, False)
                    owner.teardowns.submit(self.id, removal, _teardown_done(clock))
                else:
                    with _phase(clock, "teardown"):
                        await finish_anyway(asyncio.to_thread(remove, owner.provider, self.id))

    async def teardown(self) -> TeardownReport:
        """Wind down and remove the sandbox now; raises what the removal raises, else its report.

        A failed removal may be tried again (another `teardown`); a later `close` does nothing."""
        self._closed = True
        with log_context(environment=self.id):
            try:
                await self._wind_down()
            finally:
                removal = asyncio.ensure_future(
                    asyncio.to_thread(self._owner.provider.teardown, self.id, False)
                )
                try:
                    report = await asyncio.shield(removal)
                except asyncio.CancelledError:
                    with contextlib.suppress(Exception):
                        await removal
                    raise
            return report


def _teardown_done(clock: PhaseClock | None) -> Callable[[float], None] | None:
    if clock is None:
        return None
    return lambda seconds: clock.record("teardown", seconds)
