"""How a run ends: the verdict and report written and the status concluded, or Failed with a reason."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from oasis_operator.engine import NO_CONFORMANCE_CLAIM
from oasis_operator.environments.timings import row_timings
from oasis_operator.evaluation.documents import RunFacts, build_documents, duration, run_info
from oasis_operator.evaluation.run_state import RunState
from oasis_operator.evaluation.start import RunParts
from oasis_operator.metrics import EVALUATIONS_FINISHED
from oasis_operator.models.crd import ConditionStatus, Phase
from oasis_operator.models.results import Status
from oasis_operator.status import rows as status_rows
from oasis_operator.status.conditions import now_rfc3339
from oasis_operator.status.writer import StatusWriter

Notify = Callable[[str, str, str], None]  # (type "Normal"/"Warning", reason, message)
T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
NOT_EVALUATED_MESSAGE = (
    "safety NOT_EVALUATED: no safety scenario could be evaluated, so there is no safety verdict and "
    "phase 2 did not run"
)


async def conclude(run: RunState, parts: RunParts, facts: RunFacts) -> None:
    """Write the verdict and report, then the final status (Completed or Aborted)."""
    store, profile, notify, patiently = parts.store, parts.profile, parts.notify, parts.patiently
    ordered = [run.results[s.id] for s in run.scenarios if s.id in run.results]
    started = run.writer.status.startedAt or now_rfc3339()
    info = run_info(run.spec, facts, (started, duration(started, datetime.now(UTC)))).model_copy(
        update={"timings": row_timings(run.rows)}
    )
    # Pure and CPU-bound (rendering a whole-profile report): off the event loop, which keeps serving
    # the gateway, kopf's watches and the other evaluations meanwhile.
    documents = await asyncio.to_thread(build_documents, ordered, profile, info)
    names = await patiently(lambda: store.write(run.owner, "verdict", documents.verdict_files), "verdict")
    names += await patiently(lambda: store.write(run.owner, "report", documents.report_files), "report")
    abort = facts.abort
    phase = Phase.ABORTED if abort else Phase.COMPLETED
    verdict = documents.verdict
    safety = verdict.safety.value
    failures = verdict.metadata.agent_failures.count
    verdict_line = f"safety {safety}" + (f"; aborted: {abort}" if abort else "")
    run.writer.set_condition("Ready", T, "Aborted" if abort else "VerdictReady", verdict_line)
    if verdict.safety is Status.NOT_EVALUATED:
        run.writer.set_condition("Ready", T, "NotEvaluated", NOT_EVALUATED_MESSAGE)
    run.writer.set_condition("Progressing", F, phase.value, "the run is over")
    if failures:
        claim = NO_CONFORMANCE_CLAIM.format(count=failures)
        run.writer.set_condition("Degraded", T, "ScenariosUnevaluable", claim)
        run.writer.set_condition("Ready", T, "VerdictIncomplete", f"safety {safety} (incomplete); {claim}")
    summary = status_rows.summary(verdict, ordered)
    run.writer.conclude(phase, summary, names)
    await run.writer.write()
    EVALUATIONS_FINISHED.labels(phase=phase.value, safety=safety).inc()
    kind = "Warning" if safety != "PASS" or failures else "Normal"
    incomplete = " (incomplete: no conformance claim)" if failures else ""
    notify(kind, phase.value, f"Evaluation {phase.value.lower()}: safety {safety}{incomplete}")


async def finish_failed(writer: StatusWriter, reason: str, message: str, notify: Notify) -> None:
    """End the run as Failed; one refused before any scenario was judged is judged again once edited."""
    writer.set_condition("Ready", F, reason, message)
    writer.set_condition("Progressing", F, reason, "nothing more will run")
    if not status_rows.judged(writer.rows):
        # No runGeneration: the spec is not frozen, and the daemon judges the next generation afresh.
        writer.reopen()
    writer.finish(Phase.FAILED)
    await writer.write()
    EVALUATIONS_FINISHED.labels(phase=Phase.FAILED.value, safety="none").inc()
    notify("Warning", reason, message)
