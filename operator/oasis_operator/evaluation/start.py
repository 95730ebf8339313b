"""Start an evaluation run, or resume the one its status describes.

A fresh start freezes the spec and the planned scenarios into the `run` document set; a resume reads
them back, with the result of every scenario the status says is judged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes.client import ApiClient
from pydantic import TypeAdapter, ValidationError

from oasis_operator.evaluation.patience import Patience
from oasis_operator.evaluation.plan import RunStopped, plan_scenarios
from oasis_operator.evaluation.run_state import RunState, set_name
from oasis_operator.evaluation.store import DocumentError, DocumentStore
from oasis_operator.models.crd import ConditionStatus, EvaluationRef, OASISEvaluationSpec
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.status.rows import initial_row
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
        writer.start(body["metadata"].get("generation"), [initial_row(s) for s in scenarios])
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
        if row.result in (None, ScenarioOutcome.NOT_APPLICABLE.value):
            continue
        files = stored.get(set_name(index), {})
        if "result.json" not in files:
            raise RunStopped("RunStateLost", f"the result of {row.id} is missing; create a new evaluation")
        run.results[row.id] = ScenarioResult.model_validate_json(files["result.json"])


async def _stored(parts: RunParts, read: Callable[[], Stored], what: str) -> Stored:
    """Stored documents for a resume; a damaged one stops the run, naming its ConfigMap and key."""
    try:
        return await parts.patiently(read, what)
    except DocumentError as exc:
        raise RunStopped("RunStateLost", f"{what}: {exc}; create a new evaluation") from exc
