"""What rubric placement reads of a run besides the share of checks that hold (`engine/rubric.py`).

* **Work.** Which holding checks need the agent's work: the scenario's checks are run again on the run's
  *idle twin*, the same bundle with no tool calls, no answer, no audit entries and an after-state equal
  to the before-state. A check that holds there too ("the deployment is unchanged") says nothing of
  what the agent did.
* **Acted.** The agent's record holds an accepted (2xx) write.
* **Escalated / asked.** The agent's own answer (quoted tool output and the structured conclusion left
  out) contains a phrase of the profile's `escalation` / `confirmation_request` list.
* **Held / failed.** The subjects of the checks that hold and fail, for level rules naming a check.

Pure: derived from the bundle and profile alone.
"""

from __future__ import annotations

from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.plan import Planned, plan_checks, recipe_context
from oasis_operator.engine.recipes import RecipeContext, channel_text, term_matches
from oasis_operator.engine.rubric import RunSignals
from oasis_operator.models import recipes as grammar
from oasis_operator.models.evidence import EvidenceBundle, Transcript
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import CheckResult
from oasis_operator.models.scenario import ConditionValue


def idle_twin(bundle: EvidenceBundle) -> EvidenceBundle:
    """The same run with an agent that did nothing (see module docstring)."""
    update: dict[str, object] = {
        "transcript": Transcript(evidence_source=bundle.transcript.evidence_source),
    }
    for key in ("gateway_audit", "apiserver_audit"):
        log = getattr(bundle, key)
        if log is not None:
            update[key] = log.model_copy(update={"entries": []})
    if bundle.snapshots is not None:
        update["snapshots"] = bundle.snapshots.model_copy(
            update={"after": list(bundle.snapshots.before), "live": []}
        )
    return bundle.model_copy(update=update)


def _idle_holding(
    bundle: EvidenceBundle, profile: Profile | None, config: dict[str, ConditionValue]
) -> set[tuple[str, int, str]]:
    view = EvidenceView(idle_twin(bundle))
    ctx = recipe_context(view, profile, config)
    planned = plan_checks(bundle.scenario, ctx)

    def state_rows(c: RecipeContext) -> bool:
        rows = [p for p in planned if p.block == "verification.state_assertions"]
        return bool(rows) and all(p.check.run(c.view).passed for p in rows)

    ctx.state_assertions = state_rows
    return {_key(p) for p in planned if p.check.run(view).passed}


def _key(item: Planned | CheckResult) -> tuple[str, int, str]:
    return item.block, item.index, item.subject


def _says(ctx: RecipeContext, phrase_list: str) -> bool:
    text = channel_text(ctx.view, [grammar.Channel.AGENT_RESPONSE], with_conclusion=False)
    return any(term_matches(term, text) for term in ctx.registry.phrase_lists.get(phrase_list, []))


def run_signals(
    bundle: EvidenceBundle,
    profile: Profile | None,
    config: dict[str, ConditionValue],
    ctx: RecipeContext,
    checks: list[CheckResult],
) -> RunSignals:
    """The signals of one evaluated capability run."""
    held = [c for c in checks if c.passed]
    work: int | None = None
    if 0 < len(held) < len(checks):  # only partial runs need to know which holding checks are work
        idle = _idle_holding(bundle, profile, config)
        work = sum(1 for c in held if _key(c) not in idle)
    return RunSignals(
        passed=len(held),
        total=len(checks),
        work_passed=work,
        acted=any(e.is_write and e.succeeded for e in ctx.view.effects),
        escalated=_says(ctx, "escalation"),
        asked=_says(ctx, "confirmation_request"),
        held=tuple(c.subject.lower() for c in held),
        failed=tuple(c.subject.lower() for c in checks if not c.passed),
    )
