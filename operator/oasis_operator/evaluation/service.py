"""Run one OASISEvaluation: preflight, agent identity, phase 1 (safety), the gate, phase 2, the verdict.

The service is resumable: everything it needs to continue lives in the evaluation's status and in the
ConfigMaps it owns (the frozen spec and scenario list in the `run` set, each finished scenario's result
and evidence in a `scenario-NN` set). Scenarios with a result are never run again; a scenario that was in
flight when the operator stopped has its sandboxes removed and runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator.agents.protocol import IdentityDocument
from oasis_operator.agents.sandbox import isolation_characteristics
from oasis_operator.engine import (
    provider_failure_result,
    safety_verdict,
)
from oasis_operator.environments.background_teardown import BackgroundTeardown
from oasis_operator.environments.runtime import RuntimeSetupError, Sandboxes, SandboxTarget
from oasis_operator.environments.session import Environments
from oasis_operator.environments.timings import PhaseClock
from oasis_operator.evaluation.adapter import agent_adapter, check_agent_allowed
from oasis_operator.evaluation.bounds import bounded_json, scenario_files
from oasis_operator.evaluation.cleanup import teardown_for
from oasis_operator.evaluation.conclusion import conclude, finish_failed
from oasis_operator.evaluation.contact import is_unreachable
from oasis_operator.evaluation.documents import RunFacts
from oasis_operator.evaluation.identity import identify
from oasis_operator.evaluation.patience import Patience
from oasis_operator.evaluation.plan import RunStopped
from oasis_operator.evaluation.repeat_rows import settle_run
from oasis_operator.evaluation.repetitions import first_start, pending_runs, tagged
from oasis_operator.evaluation.run_state import RunState, reference, set_name
from oasis_operator.evaluation.scenario_run import (
    ProviderFaultError,
    RunnerConfig,
    ScenarioRun,
    ScenarioRunner,
)
from oasis_operator.evaluation.start import (
    Notify,
    RunParts,
    plan_rows,
    preflight,
    resume_cleanup,
    start_or_resume,
)
from oasis_operator.evaluation.store import DocumentStore
from oasis_operator.kube import is_transient
from oasis_operator.logs import log_context
from oasis_operator.metrics import EVALUATION_PHASE_TRANSITIONS, observe_scenario
from oasis_operator.models.crd import (
    ConditionStatus,
    EvaluationRef,
    OASISEvaluationStatus,
    Phase,
    ScenarioRow,
)
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult, Status
from oasis_operator.models.scenario import Classification
from oasis_operator.status import rows as status_rows
from oasis_operator.status.conditions import now_rfc3339
from oasis_operator.status.evaluation import StatusUnreadableError, read_status
from oasis_operator.status.writer import StatusWriter

log = logging.getLogger(__name__)
TERMINAL = {Phase.COMPLETED, Phase.ABORTED, Phase.FAILED}
T, F = ConditionStatus.TRUE, ConditionStatus.FALSE


class _Abort(Exception):  # noqa: N818 - a control-flow signal, not an error
    def __init__(self, scenario_id: str, fault: str) -> None:
        super().__init__(fault if fault.startswith(scenario_id) else f"{scenario_id}: {fault}")


class _Unreachable(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The run's first agent calls never reached the agent."""


class EvaluationService:
    """Runs evaluations against the host API server (CRs, ConfigMaps, Secrets) and a sandbox cluster."""

    def __init__(self, host_api: ApiClient, profile: Profile, sandboxes: Sandboxes, notify: Notify) -> None:
        self.api = host_api
        self.profile = profile
        self.sandboxes = sandboxes
        self.store = DocumentStore(host_api)
        self.notify = notify
        self.patiently = Patience(sandboxes.config.host_patience)
        self.parts = RunParts(host_api, profile, self.store, notify, self.patiently)

    async def run(
        self,
        body: dict[str, Any],
        generation: Callable[[], int | None],
        slots: asyncio.Semaphore | None = None,
    ) -> OASISEvaluationStatus:
        """Take the evaluation from wherever its status says it is to a terminal phase; the final status.

        `slots` bounds how many evaluations run at once; one that has to wait is `Pending` meanwhile. An
        evaluation refused before its run started (bad spec) is judged again once its spec changes.
        """
        owner = EvaluationRef.of(body)
        raw = body.get("status") or {}
        # Every log line of the run, in its tasks and threads too, names the evaluation (`logs.py`).
        with log_context(evaluation=f"{owner.namespace}/{owner.name}"):
            try:
                status = read_status(raw)
            except StatusUnreadableError as exc:
                writer = self._writer(owner, OASISEvaluationStatus(), raw, generation)
                await self._finish_failed(writer, "StatusUnreadable", f"{exc}; create a new OASISEvaluation")
                return writer.status
            writer = self._writer(owner, status, raw, generation)
            try:
                await self._run(writer, body, generation, slots)
            finally:
                await writer.close()  # what is still pending goes out, also when the run is cancelled
            return writer.status

    async def _run(
        self,
        writer: StatusWriter,
        body: dict[str, Any],
        generation: Callable[[], int | None],
        slots: asyncio.Semaphore | None,
    ) -> None:
        status, meta, owner = writer.status, body["metadata"], EvaluationRef.of(body)
        if status.phase in TERMINAL:
            never_started = status.runGeneration is None
            if not never_started or status.observedGeneration == generation():
                await writer.write()  # only the SpecFrozen condition can change now
                return
            writer.clear_completion()
        if slots is not None and slots.locked() and status.runGeneration is None:
            writer.set_condition(
                "Progressing",
                T,
                "Queued",
                "waiting for a free slot: the operator's evaluation limit is reached",
            )
            writer.set_condition("Ready", F, "Pending", "no verdict yet")
            writer.set_phase(Phase.PENDING)
            await writer.write()
            self.notify("Normal", "Queued", "Queued: other evaluations are using every slot")
        async with slots if slots is not None else contextlib.nullcontext():
            try:
                run = await start_or_resume(self.parts, owner, body, writer)
                await self._execute(run)
            except RunStopped as stop:
                await self._finish_failed(writer, stop.reason, str(stop))
            except Exception as exc:
                if is_transient(exc):
                    raise  # the host API is away for longer than the writer waits: kopf restarts us
                # A defect must end the run with a reason on the object, not a traceback every minute.
                log.exception("evaluation %s/%s: internal error", meta["namespace"], meta["name"])
                await self._finish_failed(writer, "InternalError", f"{type(exc).__name__}: {exc}")

    def _writer(
        self,
        owner: EvaluationRef,
        status: OASISEvaluationStatus,
        raw: dict[str, Any],
        generation: Callable[[], int | None],
    ) -> StatusWriter:
        """The run's status writer: host API outages waited out, phase changes counted."""

        def count_phase(phase: Phase) -> None:
            EVALUATION_PHASE_TRANSITIONS.labels(phase=phase.value).inc()

        return StatusWriter(
            self.api, owner, status, generation, stored=raw, retry=self.patiently, on_phase=count_phase
        )

    # --- the flow ---------------------------------------------------------------------------------------
    async def _execute(self, run: RunState) -> None:
        spec, writer = run.spec, run.writer
        namespace, uid = run.owner.namespace, run.owner.uid
        try:
            # Refused before anything is built: a kind of agent the platform has not turned on.
            check_agent_allowed(spec.agent, self.sandboxes.config.command_agents)
            async with self.sandboxes.target(self.api, namespace, uid, spec.environment) as target:
                conformance = await preflight(run, target, self.profile)
                adapter, time_limit = agent_adapter(self.api, namespace, spec.agent, self.sandboxes.config)
                identity = await identify(
                    self.store, self.profile, run.owner, run.spec.agent.name, adapter, run.writer, self.notify
                )
                configuration = identity.configuration
                plan_rows(run, configuration)
                teardowns = BackgroundTeardown()
                environments = Environments(
                    target.provider,
                    target.gateway,
                    apiserver_audit=target.apiserver_audit,
                    teardowns=teardowns,
                )
                config = RunnerConfig(
                    self.profile, identity, dict(configuration), evaluation=reference(run),
                    agent_timeout=min(time_limit, float(spec.timeouts.agentSeconds)), mutation=spec.mutation,
                )  # fmt: skip
                runner = ScenarioRunner(environments, adapter, config)
                await resume_cleanup(run, target)
                try:
                    abort = await self._phase(run, runner, Classification.SAFETY, Phase.SAFETY)
                    if abort is None:
                        gate = safety_verdict(
                            [r for r in run.results.values() if r.classification == "safety"]
                        )
                        if gate is Status.PASS:
                            abort = await self._phase(
                                run, runner, Classification.CAPABILITY, Phase.CAPABILITY
                            )
                        else:
                            writer.set_rows(
                                status_rows.skipped(
                                    run.rows,
                                    Classification.CAPABILITY,
                                    f"not run: phase 1 is {gate.value}, so phase 2 is skipped",
                                )
                            )
                finally:
                    await teardowns.drain()
                    # Anything an interrupted or faulty teardown left behind goes now, not at next start.
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(teardown_for, target, reference(run))
                await self._conclude(run, identity, conformance, abort, target)
        except RuntimeSetupError as exc:
            raise RunStopped(exc.reason, str(exc)) from exc

    async def _phase(
        self, run: RunState, runner: ScenarioRunner, classification: Classification, phase: Phase
    ) -> str | None:
        """Run the phase's pending scenarios (bounded parallelism); the abort reason if a fault stopped it.

        With spec.repetitions > 1 the unit is one run of a scenario (`evaluation.repetitions`).
        """
        pending = pending_runs(run.rows, classification, run.spec.repetitions)
        if run.writer.phase != phase:
            run.writer.set_condition(
                "Progressing", T, phase.value, f"running {classification.value} scenarios"
            )
            run.writer.set_phase(phase)
            await run.writer.write()
            self.notify(
                "Normal", "PhaseChanged", f"Entered phase {phase.value} ({len(pending)} scenarios to run)"
            )
        gate = asyncio.Semaphore(run.spec.parallelism)

        async def one(index: int, repeat: int | None) -> None:
            async with gate:
                with log_context(scenario=run.scenarios[index].id):  # each task its own scenario id
                    await self._scenario(run, runner, index, repeat)

        reasons: list[str] = []
        unreachable: list[str] = []
        try:
            async with asyncio.TaskGroup() as group:
                for index, repeat in pending:
                    group.create_task(one(index, repeat))
        except* _Abort as aborted:
            reasons.extend(str(e) for e in aborted.exceptions)
        except* _Unreachable as stopped:
            unreachable.extend(str(e) for e in stopped.exceptions)
        if unreachable:
            raise RunStopped(
                "AgentUnreachable",
                f"the agent could not be reached: {unreachable[0]}; no scenario was judged. Check "
                "spec.agent and that the agent is running; fixing the spec judges the evaluation again",
            )
        if not reasons:
            return None
        note = "not run: the run aborted on a provider fault"
        for index, row in enumerate(run.rows):
            if not status_rows.is_done(row):
                run.writer.set_row(index, row.model_copy(update={"message": note, "startedAt": None}))
        return reasons[0]

    async def _scenario(
        self, run: RunState, runner: ScenarioRunner, index: int, repeat: int | None = None
    ) -> None:
        """One run of the scenario at `index`: its only one, or run `repeat` of spec.repetitions."""
        scenario = run.scenarios[index]
        row = run.rows[index].model_copy(
            update={"startedAt": first_start(run.rows[index], repeat), "message": None}
        )
        run.writer.set_row(index, row)
        await run.writer.write()
        started = time.monotonic()
        bundle_json, agent_error, codes, trimmed, unreachable = None, None, [], None, False
        clock = PhaseClock()
        try:
            done: ScenarioRun = await asyncio.wait_for(
                runner.run(scenario, run.plan_of(scenario), clock), run.spec.timeouts.scenarioSeconds
            )
            result = done.result
            with clock.phase("storage"):
                bundle = tagged(done.bundle, repeat, run.spec.repetitions)  # which run, for replay
                bounded = bounded_json(bundle.model_dump(mode="json", by_alias=True))
            bundle_json, trimmed = bounded.text, bounded.note
            if done.bundle.gateway_audit is not None:
                codes = [e.response_code for e in done.bundle.gateway_audit.entries]
            if done.outcome.error_kind:
                agent_error = f"{done.outcome.error_kind}: {done.outcome.error}"
            unreachable = is_unreachable(done.outcome, done.bundle.gateway_audit)
        except ProviderFaultError as exc:
            result = provider_failure_result(scenario, str(exc))
        except TimeoutError:
            result = provider_failure_result(
                scenario,
                f"the scenario exceeded spec.timeouts.scenarioSeconds ({run.spec.timeouts.scenarioSeconds}s)",
            )
        except Exception as exc:
            # A harness that cannot judge a scenario must stop the run, not guess a result.
            log.exception("scenario %s: evaluation harness error", scenario.id)
            result = provider_failure_result(
                scenario, f"evaluation harness error: {type(exc).__name__}: {exc}"
            )
        if unreachable and not status_rows.judged(run.rows):
            # The run's first calls never reached the agent: stop before any verdict.
            run.writer.set_row(index, run.rows[index].model_copy(update={"startedAt": None}))
            raise _Unreachable(f"{scenario.id}: agent {agent_error}")
        faulted = result.outcome is ScenarioOutcome.PROVIDER_FAILURE  # this run's own fault aborts the run
        fault = (result.provider_fault or "provider fault") if faulted else None
        kept = await self._keep(
            run, index, repeat, result, scenario_files(result, bundle_json, trimmed), clock
        )
        if kept is None:  # a run of a repeated scenario whose other runs are not all over
            return
        result, evidence = kept
        run.results[scenario.id] = result
        finished = status_rows.finished_row(row, result, evidence, agent_error, trimmed=trimmed is not None)
        run.writer.set_row(index, finished.model_copy(update={"finishedAt": now_rfc3339()}))
        clock.follow(lambda timings: run.writer.set_timings(index, timings))
        observe_scenario(
            result.classification, result.outcome.value, time.monotonic() - started, agent_error, codes
        )
        run.writer.count()
        # A provider fault aborts the run: its row goes out at once, not with the next rows.
        await run.writer.write(now=fault is not None)
        self._announce(scenario.id, result, run.rows[index])
        if fault is not None:  # this run's own fault (a repeated scenario may still be FAIL by another)
            raise _Abort(scenario.id, fault)

    def _announce(self, scenario_id: str, result: ScenarioResult, row: ScenarioRow) -> None:
        """A Warning event for a scenario that failed, is unevaluable, or met a provider fault."""
        if result.outcome is ScenarioOutcome.FAIL:
            self.notify("Warning", "ScenarioFailed", f"Scenario {scenario_id} failed: {row.message or ''}")
        if result.outcome is ScenarioOutcome.UNEVALUABLE:
            cause = row.unevaluable or result.summary
            self.notify("Warning", "ScenarioUnevaluable", f"Scenario {scenario_id} is unevaluable: {cause}")
        if result.outcome is ScenarioOutcome.PROVIDER_FAILURE:
            self.notify("Warning", "ProviderFailure", f"{scenario_id}: {result.provider_fault}")

    async def _keep(
        self,
        run: RunState,
        index: int,
        repeat: int | None,
        result: ScenarioResult,
        files: dict[str, str],
        clock: PhaseClock,
    ) -> tuple[ScenarioResult, str] | None:
        """Store the run's documents; (the scenario's result, its evidence ConfigMap) once it is over."""
        names = await self._store(run, index, files, clock, repeat)
        if repeat is None:
            return result, names[0]
        return await settle_run(run, index, (repeat, result, names[0]), self.notify)  # repetitions > 1

    async def _store(
        self, run: RunState, index: int, files: dict[str, str], clock: PhaseClock, repeat: int | None = None
    ) -> list[str]:
        """Write the scenario's (or its run's) document set (its `storage` phase); the ConfigMap names."""
        with clock.phase("storage"):
            write = lambda: self.store.write(run.owner, set_name(index, repeat), files)  # noqa: E731
            return await self.patiently(write, "scenario set")

    async def _conclude(
        self,
        run: RunState,
        identity: IdentityDocument,
        conformance: str,
        abort: str | None,
        target: SandboxTarget,
    ) -> None:
        isolation = isolation_characteristics(run.spec.agent, self.sandboxes.config.agent_uid)
        facts = RunFacts(identity, conformance, target.description, abort, isolation)
        await conclude(run, self.parts, facts)

    async def _finish_failed(self, writer: StatusWriter, reason: str, message: str) -> None:
        await finish_failed(writer, reason, message, self.notify)
