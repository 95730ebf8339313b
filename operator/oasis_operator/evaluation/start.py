"""Start an evaluation run, or resume the one its status describes.

A fresh start freezes the spec and the planned scenarios into the `run` document set; a resume reads
them back, with the result of every scenario the status says is judged.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from pydantic import TypeAdapter, ValidationError

from oasis_operator.evaluation import rows as status_rows
from oasis_operator.evaluation.patience import patiently
from oasis_operator.evaluation.plan import RunStopped, plan_scenarios
from oasis_operator.evaluation.run_state import RunState, set_name
from oasis_operator.evaluation.store import DocumentStore
from oasis_operator.evaluation.writer import StatusWriter
from oasis_operator.models.crd import ConditionStatus, EvaluationRef, OASISEvaluationSpec, Phase
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.status.conditions import now_rfc3339

Notify = Callable[[str, str, str], None]  # (type "Normal"/"Warning", reason, message)
T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
_SCENARIOS = TypeAdapter(list[Scenario])
# Left over from an attempt that was refused before any scenario ran; a fresh start clears them (a
# merge patch removes a field written as null, and keeps one that is merely absent).
_ATTEMPT_FIELDS: dict[str, Any] = {
    "scenarios": [],
    "preflightGaps": [],
    "reportConfigMaps": [],
    "progress": None,
    "summary": None,
    "agent": None,
}


@dataclass(frozen=True)
class RunParts:
    """What starting or resuming a run needs: the host API, the profile, the document store, events."""

    api: ApiClient
    profile: Profile
    store: DocumentStore
    notify: Notify


async def start_or_resume(
    parts: RunParts, owner: EvaluationRef, body: dict[str, Any], writer: StatusWriter
) -> RunState:
    """A fresh run (spec and scenarios frozen into the `run` set) or the one the status describes."""
    status = writer.status
    namespace, uid = owner.namespace, owner.uid
    if status.get("runGeneration") is None:
        status.update(copy.deepcopy(_ATTEMPT_FIELDS))
        await patiently(lambda: parts.store.delete(namespace, uid, "agent"), "agent set")
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
        await patiently(lambda: parts.store.write(owner, "run", files), "run set")
        writer.conditions(
            ("Progressing", T, "Preflight", "checking the sandbox provider"),
            ("Ready", F, "Running", "no verdict yet"),
        )
        await writer.write(
            phase=Phase.PREFLIGHT.value,
            runGeneration=body["metadata"].get("generation"),
            startedAt=now_rfc3339(),
            progress=status_rows.progress([status_rows.initial_row(s) for s in scenarios]),
        )
        parts.notify("Normal", "Started", f"Started the evaluation with {len(scenarios)} scenarios")
        return RunState(owner=owner, spec=spec, scenarios=scenarios, writer=writer, plans=planned.plans)
    files = await patiently(lambda: parts.store.read(namespace, uid, "run"), "run set")
    if "spec.json" not in files or "scenarios.json" not in files:
        raise RunStopped(
            "RunStateLost", "the run ConfigMap with the frozen spec is gone; create a new evaluation"
        )
    spec = OASISEvaluationSpec.model_validate_json(files["spec.json"])
    scenarios = _SCENARIOS.validate_json(files["scenarios.json"])
    run = RunState(owner=owner, spec=spec, scenarios=scenarios, writer=writer)
    await load_results(parts.store, run)
    parts.notify("Normal", "Resumed", f"Resumed the evaluation in phase {status.get('phase')}")
    return run


async def load_results(store: DocumentStore, run: RunState) -> None:
    """The results of the scenarios the status says are judged; a missing one stops the run."""
    namespace, uid = run.owner.namespace, run.owner.uid
    stored = await patiently(lambda: store.read_all(namespace, uid), "document sets")
    for index, row in enumerate(run.rows):
        if row.get("result") in (None, ScenarioOutcome.NOT_APPLICABLE.value):
            continue
        files = stored.get(set_name(index), {})
        if "result.json" not in files:
            raise RunStopped("RunStateLost", f"the result of {row['id']} is missing; create a new evaluation")
        run.results[row["id"]] = ScenarioResult.model_validate_json(files["result.json"])
