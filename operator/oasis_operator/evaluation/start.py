"""Start an evaluation run, or resume the one its status describes.

A fresh start freezes the spec and the planned scenarios into the `run` document set; a resume reads
them back, with the result of every scenario the status says is judged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes.client import ApiClient
from pydantic import TypeAdapter, ValidationError

from oasis_operator.engine import applicability_reasons, excluded_result
from oasis_operator.environments.conformance import checked_server, conformance_summary, find_gaps
from oasis_operator.environments.preflight import self_check
from oasis_operator.environments.runtime import SandboxTarget
from oasis_operator.evaluation.cleanup import teardown_for
from oasis_operator.evaluation.patience import Patience
from oasis_operator.evaluation.plan import RunStopped, plan_scenarios
from oasis_operator.evaluation.repetitions import finished_runs
from oasis_operator.evaluation.run_state import RunState, reference, set_name
from oasis_operator.evaluation.store import DocumentError, DocumentStore, configmap_name
from oasis_operator.models.crd import ConditionStatus, EvaluationRef, OASISEvaluationSpec, Phase
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.status import rows as status_rows
from oasis_operator.status.writer import StatusWriter

Notify = Callable[[str, str, str], None]  # (type "Normal"/"Warning", reason, message)
T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
_SCENARIOS = TypeAdapter(list[Scenario])
Stored = TypeVar("Stored")


@dataclass(frozen=True)
class RunParts:
    """What starting, resuming and concluding a run needs: the host API, the profile, the document store,
    events, and how long host API calls are retried."""

    api: ApiClient
    profile: Profile
    store: DocumentStore
    notify: Notify
    patiently: Patience


async def start_or_resume(
    parts: RunParts, owner: EvaluationRef, body: dict[str, Any], writer: StatusWriter
) -> RunState:
    """A fresh run (spec and scenarios frozen into the `run` set) or the one the status describes."""
    namespace, uid = owner.namespace, owner.uid
    if writer.status.runGeneration is None:
        writer.clear_attempt()  # what an attempt refused before any scenario ran left behind
        await parts.patiently(lambda: parts.store.delete(namespace, uid, "agent"), "agent set")
        try:
            spec = OASISEvaluationSpec.model_validate(body.get("spec") or {})
        except ValidationError as exc:
            raise RunStopped("InvalidSpec", describe_validation_error(exc, prefix="spec")) from exc
        planned = await asyncio.to_thread(plan_scenarios, parts.api, parts.profile, spec, owner.namespace)
        scenarios = planned.scenarios
        files = {
            "spec.json": spec.model_dump_json(by_alias=True, exclude_none=True),
            "scenarios.json": _SCENARIOS.dump_json(scenarios, by_alias=True, exclude_none=True).decode(),
        }
        await parts.patiently(lambda: parts.store.write(owner, "run", files), "run set")
        writer.set_condition("Progressing", T, "Preflight", "checking the sandbox provider")
        writer.set_condition("Ready", F, "Running", "no verdict yet")
        writer.start(
            body["metadata"].get("generation"),
            [status_rows.with_runs(status_rows.initial_row(s), spec.repetitions) for s in scenarios],
        )
        await writer.write()
        parts.notify("Normal", "Started", f"Started the evaluation with {len(scenarios)} scenarios")
        return RunState(owner=owner, spec=spec, scenarios=scenarios, writer=writer, plans=planned.plans)
    files = await _stored(parts, lambda: parts.store.read(namespace, uid, "run"), "run set")
    if "spec.json" not in files or "scenarios.json" not in files:
        raise RunStopped(
            "RunStateLost", "the run ConfigMap with the frozen spec is gone; create a new evaluation"
        )
    spec = OASISEvaluationSpec.model_validate_json(files["spec.json"])
    scenarios = _SCENARIOS.validate_json(files["scenarios.json"])
    run = RunState(owner=owner, spec=spec, scenarios=scenarios, writer=writer)
    await load_results(parts, run)
    parts.notify("Normal", "Resumed", f"Resumed the evaluation in phase {writer.phase}")
    return run


async def load_results(parts: RunParts, run: RunState) -> None:
    """The results of the scenarios the status says are judged; a missing one stops the run."""
    namespace, uid = run.owner.namespace, run.owner.uid
    stored = await _stored(parts, lambda: parts.store.read_all(namespace, uid), "document sets")
    for index, row in enumerate(run.rows):
        if run.spec.repetitions > 1:  # each run of each scenario has a set of its own
            load_runs(run, index, stored)
            continue
        if row.result in (None, ScenarioOutcome.NOT_APPLICABLE.value):
            continue
        files = stored.get(set_name(index), {})
        if "result.json" not in files:
            raise RunStopped("RunStateLost", f"the result of {row.id} is missing; create a new evaluation")
        run.results[row.id] = ScenarioResult.model_validate_json(files["result.json"])


def load_runs(run: RunState, index: int, stored: Mapping[str, Mapping[str, str]]) -> None:
    """The runs of a repeated scenario its row marks as over; the scenario's result once it is done.

    A run whose letter is in the row but whose set holds no result is lost, and stops the run.
    """
    row = run.rows[index]
    if row.result == ScenarioOutcome.NOT_APPLICABLE.value:
        return
    for number in finished_runs(row):
        name = set_name(index, number)
        files = stored.get(name, {})
        if "result.json" not in files:
            raise RunStopped("RunStateLost", f"run {number} of {row.id} is missing; create a new evaluation")
        result = ScenarioResult.model_validate_json(files["result.json"])
        run.book.record(row.id, number, result, configmap_name(run.owner.name, name, 0))
    if row.result is not None:
        combined = run.book.combined(row.id)
        if combined is None:
            raise RunStopped("RunStateLost", f"the runs of {row.id} do not give its result")
        run.results[row.id] = combined


async def preflight(run: RunState, target: SandboxTarget, profile: Profile) -> str:
    """The provider's conformance for the run's tier: a summary, or the run stopped on a gap."""
    contract = profile.conformance
    declared = await asyncio.to_thread(self_check, target.api, target.prefix, True)
    gaps = find_gaps(contract, declared, run.spec.tier) if contract else []
    summary = conformance_summary(declared, gaps)
    run.writer.set_sandbox_server(checked_server(declared))
    await run.writer.write()
    if gaps and run.writer.phase in (None, Phase.PENDING, Phase.PREFLIGHT):
        run.writer.set_preflight_gaps([g.describe() for g in gaps])
        await run.writer.write()
        raise RunStopped("PreflightFailed", "provider conformance: " + "; ".join(g.describe() for g in gaps))
    if gaps:  # resumed mid-run and the provider degraded: that is a runtime provider fault
        raise RunStopped("ProviderDegraded", summary)
    return summary


def plan_rows(run: RunState, configuration: dict[str, Any]) -> None:
    """The rows once the agent's configuration is known: NOT_APPLICABLE decided per scenario."""
    if run.rows:
        return
    rows = []
    for scenario in run.scenarios:
        reasons = applicability_reasons(scenario, configuration)
        if reasons:
            rows.append(status_rows.excluded_row(scenario, reasons))
            run.results[scenario.id] = excluded_result(scenario, reasons)
        else:
            rows.append(status_rows.initial_row(scenario))
    run.writer.set_rows([status_rows.with_runs(r, run.spec.repetitions) for r in rows])
    run.writer.count()


async def resume_cleanup(run: RunState, target: SandboxTarget) -> None:
    """Remove every sandbox the evaluation left: none of its scenarios runs yet, so each one found was
    in flight, or queued for background removal, when the operator stopped."""
    await asyncio.to_thread(teardown_for, target, reference(run))
    for index, row in enumerate(run.rows):
        if not status_rows.is_done(row) and row.startedAt:
            run.writer.set_row(index, row.model_copy(update={"startedAt": None}))
        if row.result == ScenarioOutcome.NOT_APPLICABLE.value and row.id not in run.results:
            scenario = next(s for s in run.scenarios if s.id == row.id)
            run.results[row.id] = excluded_result(scenario, (row.reason or "").split("; "))


async def _stored(parts: RunParts, read: Callable[[], Stored], what: str) -> Stored:
    """Stored documents for a resume; a damaged one stops the run, naming its ConfigMap and key."""
    try:
        return await parts.patiently(read, what)
    except DocumentError as exc:
        raise RunStopped("RunStateLost", f"{what}: {exc}; create a new evaluation") from exc
