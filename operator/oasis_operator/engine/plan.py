"""Compile a scenario into checks: one per assertion and verification entry, in scenario order.

Where each entry's decision comes from (profiles/software-infrastructure/RECIPES.md §5, plus this
engine's fixed tables):

* behaviours: the scenario's ``x-oasis-operator.recipes[id]``, else the profile registry's recipe;
  a behaviour with neither is an :class:`EngineError` (never an "unknown behaviour" pass);
* actions: expressions of the one grammar (:mod:`oasis_operator.models.actions`) are matched by
  effect; other text uses the scenario's ``actions[text]`` recipe, else it is an
  :class:`EngineError` with the validator's own message (it needs a recipe); a required action with
  an ordinal, expression or recipe-backed, is placed after the step before it (:mod:`ordering`);
* free-text verifications (negative verification, api_audit descriptions, state-assertion
  descriptions, non-keyword conditions, untyped resources): when both the engine's fixed table and
  the scenario's ``checks[text]`` recipe decide an entry, **both must hold**; when only one does, it
  decides. A description only the detection fallback can read (``agent identified …``) uses the
  scenario's recipe when there is one. Text that nothing recognises is an :class:`EngineError`.
* ``state_diff`` and ``value_containment``: core semantics (:mod:`statecheck`, :mod:`containment`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from oasis_operator.engine.boundary import UndecidableRecipeError
from oasis_operator.engine.checks import Check, Outcome, all_of, forbid, require
from oasis_operator.engine.containment import containment_check
from oasis_operator.engine.context import EvidenceView
from oasis_operator.engine.descriptions import description_check, description_table_check
from oasis_operator.engine.ordering import (
    OrderedSteps,
    UnorderableStepError,
    expression_placer,
    recipe_placer,
)
from oasis_operator.engine.prose import UnrecognisedEntryError, audit_prose_check, negative_check
from oasis_operator.engine.recipes import RecipeContext, behaviour_recipe, evaluate, resolve_expression
from oasis_operator.engine.statecheck import KEYWORD_CONDITIONS, state_diff_check, structured_state_check
from oasis_operator.models import recipes as grammar
from oasis_operator.models.actions import (
    KIND_TO_RESOURCES,
    ActionExpr,
    ActionSyntaxError,
    needs_recipe,
    ordinal_of,
)
from oasis_operator.models.behaviors import BehaviorRegistry, ScenarioExtension
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import AssertionEntry, ConditionValue, Scenario, StateAssertion


class EngineError(ValueError):
    """A scenario the engine cannot evaluate deterministically (unknown behaviour, unreadable entry)."""


@dataclass(frozen=True)
class Planned:
    """A compiled entry: where it comes from and its check."""

    block: str
    index: int
    subject: str
    check: Check


def effective_configuration(
    profile: Profile | None, reported: dict[str, ConditionValue]
) -> dict[str, ConditionValue]:
    """The agent's reported configuration with the profile's defaults for unreported dimensions."""
    config: dict[str, ConditionValue] = {}
    for dimension in profile.agent_configuration if profile else []:
        if dimension.default is not None:
            config[dimension.identifier] = dimension.default
    config.update(reported)
    return config


def _condition_holds(wanted: ConditionValue, actual: ConditionValue | None) -> bool:
    if actual is None:
        return False
    options = wanted if isinstance(wanted, list) else [wanted]
    return any(str(option).lower() == str(actual).lower() for option in options)


def applicability_reasons(scenario: Scenario, config: dict[str, ConditionValue]) -> list[str]:
    """Why the scenario does not apply (empty when it applies), one reason per failed condition."""
    reasons: list[str] = []
    for key in sorted(scenario.applicability or {}):
        wanted = (scenario.applicability or {})[key]
        actual = config.get(key)
        if actual is None:
            reasons.append(f"{key} not reported by the agent and no profile default (requires {wanted})")
        elif not _condition_holds(wanted, actual):
            reasons.append(f"{key}={actual} (requires {wanted})")
    return reasons


def merged_assertions(
    scenario: Scenario, config: dict[str, ConditionValue]
) -> tuple[list[AssertionEntry], list[AssertionEntry], int | None]:
    """Top-level must/must_not plus the one matching conditional entry (and its index)."""
    assertions = scenario.assertions
    if assertions is None:
        return [], [], None
    matching = [
        i
        for i, c in enumerate(assertions.conditional)
        if all(_condition_holds(v, config.get(k)) for k, v in c.when.items())
    ]
    if len(matching) > 1:
        raise EngineError(f"{scenario.id}: more than one conditional assertion matches the configuration")
    must, must_not = list(assertions.must), list(assertions.must_not)
    if matching:
        chosen = assertions.conditional[matching[0]]
        must += chosen.must
        must_not += chosen.must_not
    return must, must_not, matching[0] if matching else None


def scenario_extension(scenario: Scenario) -> ScenarioExtension:
    return scenario.extension


def _behaviour_check(ctx: RecipeContext, behavior_id: str, expected: bool) -> Check:
    recipe = behaviour_recipe(ctx, behavior_id)
    if recipe is None:
        raise EngineError(
            f"{ctx.scenario.id}: behaviour {behavior_id!r} has no definition in the profile registry"
        )
    kind = ctx.registry.get(behavior_id)
    method = f"recipe:{kind.kind.value}" if kind else "recipe"

    def run(_: EvidenceView) -> Outcome:
        before = set(ctx.missing_facts)
        ctx.used.clear()
        ctx.behavior = behavior_id
        try:
            exhibited = evaluate(recipe, ctx)
        except (ActionSyntaxError, UndecidableRecipeError) as error:
            raise EngineError(f"{ctx.scenario.id}: behaviour {behavior_id}: {error}") from error
        finally:
            ctx.behavior = None
        missing = sorted(ctx.missing_facts - before)
        detail = f"{behavior_id} {'exhibited' if exhibited else 'not exhibited'}"
        if missing:
            detail += f" (scenario defines no fact {', '.join(missing)})"
        return Outcome(exhibited == expected, detail, tuple(ctx.used), method=method)

    return Check(method, run)


def action_check(ctx: RecipeContext, text: str, forbidden: bool, steps: OrderedSteps | None = None) -> Check:
    """The check of one action entry; a required step with an ordinal joins `steps` (ordering.py)."""
    try:
        item = resolve_expression(ctx, text)
    except ActionSyntaxError as error:
        raise EngineError(f"{ctx.scenario.id}: {needs_recipe(text, error)}") from error
    place = None if forbidden or steps is None else ordinal_of(text)[1]
    if place is not None and steps is not None:
        try:
            if isinstance(item, ActionExpr):
                steps.add(place, text, expression_placer(item))
            else:
                steps.add(place, text, recipe_placer(item, ctx, " ".join(text.split())))
        except UnorderableStepError as error:
            raise EngineError(f"{ctx.scenario.id}: ordered step {text!r}: {error}") from error
        ordered = steps

        def run_ordered(view: EvidenceView) -> Outcome:
            try:
                return ordered.outcome(view, place)
            except (ActionSyntaxError, UndecidableRecipeError, UnorderableStepError) as error:
                raise EngineError(f"{ctx.scenario.id}: ordered step {text!r}: {error}") from error

        return Check("audit" if isinstance(item, ActionExpr) else "recipe", run_ordered)
    if not isinstance(item, ActionExpr):
        recipe: grammar.Recipe = item

        def run_recipe(_: EvidenceView) -> Outcome:
            ctx.used.clear()
            happened = _safe_evaluate(recipe, ctx, text)
            ok = happened != forbidden
            return Outcome(
                ok,
                f"'{text}' {'happened' if happened else 'did not happen'} (scenario recipe)",
                tuple(ctx.used),
                method="recipe",
            )

        return Check("recipe", run_recipe)
    expr: ActionExpr = item
    if forbidden:
        return Check("audit", lambda view: forbid(view, expr))
    return Check("audit", lambda view: require(view, expr)[0])


def _lookup(table: dict[str, grammar.Recipe], text: str) -> grammar.Recipe | None:
    """A recipe keyed by exact text, else by whitespace-normalised text."""
    if text in table:
        return table[text]
    wanted = " ".join(text.split())
    for key in sorted(table):
        if " ".join(key.split()) == wanted:
            return table[key]
    return None


def _safe_evaluate(recipe: grammar.Recipe, ctx: RecipeContext, what: str) -> bool:
    """Evaluate a scenario recipe; an unparsable expression inside it is an EngineError, not a crash."""
    try:
        return evaluate(recipe, ctx)
    except (ActionSyntaxError, UndecidableRecipeError) as error:
        raise EngineError(f"{ctx.scenario.id}: recipe for {what!r}: {error}") from error


def _recipe_check(ctx: RecipeContext, recipe: grammar.Recipe, what: str) -> Check:
    def run(_: EvidenceView) -> Outcome:
        ctx.used.clear()
        holds = _safe_evaluate(recipe, ctx, what)
        detail = f"scenario check for {what!r} {'holds' if holds else 'does not hold'}"
        return Outcome(holds, detail, tuple(ctx.used), method="recipe")

    return Check("recipe", run)


def decided(ctx: RecipeContext, text: str, table_check: Check | None) -> Check:
    """Combine the engine's table check and the scenario's `checks` recipe for a free-text entry."""
    recipe = _lookup(ctx.extension.checks, text)
    if recipe is None:
        if table_check is None:
            flat = " ".join(text.split())
            raise EngineError(
                f"{ctx.scenario.id}: not recognised (no engine rule, no scenario check): {flat!r}"
            )
        return table_check
    scenario_check = _recipe_check(ctx, recipe, " ".join(text.split()))
    if table_check is None:
        return scenario_check
    table = table_check

    def run(view: EvidenceView) -> Outcome:
        return all_of([table.run(view), scenario_check.run(view)], table.method)

    return Check(table.method, run, watches=table.watches)


def _table_or_none(build: Callable[[str, Scenario], Check], text: str, scenario: Scenario) -> Check | None:
    try:
        return build(text, scenario)
    except UnrecognisedEntryError:
        return None


def _state_assertion(ctx: RecipeContext, i: int, sa: StateAssertion) -> Planned:
    block = "verification.state_assertions"
    scenario = ctx.scenario
    if sa.resource is None:
        text = sa.description or ""
        table = description_table_check(text, scenario)
        if table is None and _lookup(ctx.extension.checks, text) is None:
            table = _table_or_none(description_check, text, scenario)
        return Planned(block, i, " ".join(text.split()), decided(ctx, text, table))
    subject = sa.resource + (f" ({sa.condition})" if sa.condition else "")
    structured = _table_or_none(lambda _t, s: structured_state_check(sa, s), "", scenario)
    kind = sa.resource.partition("/")[0] if "/" in sa.resource else None
    if kind is None or kind not in KIND_TO_RESOURCES:
        return Planned(block, i, subject, decided(ctx, sa.resource, structured))
    if sa.condition and sa.condition.strip() not in KEYWORD_CONDITIONS:
        return Planned(block, i, subject, decided(ctx, sa.condition, structured))
    if structured is None:
        raise EngineError(f"{scenario.id}: state assertion on {sa.resource} not recognised")
    return Planned(block, i, subject, structured)


def plan_checks(scenario: Scenario, ctx: RecipeContext) -> list[Planned]:
    """Every assertion and verification entry of the scenario as a check, in scenario order."""
    planned: list[Planned] = []
    must_steps, audit_steps = OrderedSteps(), OrderedSteps()  # ordinals: first, second, third …
    for block, entries, forbidden in (
        ("assertions.must", ctx.must, False),
        ("assertions.must_not", ctx.must_not, True),
    ):
        for i, entry in enumerate(entries):
            if entry.behavior:
                check = _behaviour_check(ctx, entry.behavior, not forbidden)
                planned.append(Planned(block, i, entry.behavior, check))
            if entry.action:
                check = action_check(ctx, entry.action, forbidden, must_steps)
                planned.append(Planned(block, i, entry.action, check))
    verification = scenario.verification
    audit_block, negative_block = "verification.api_audit", "verification.negative_verification"
    for i, sa in enumerate(verification.state_assertions):
        planned.append(_state_assertion(ctx, i, sa))
    for i, audit in enumerate(verification.api_audit):
        for text, forbidden in ((audit.forbidden, True), (audit.required, False)):
            if text:
                planned.append(Planned(audit_block, i, text, action_check(ctx, text, forbidden, audit_steps)))
        if audit.description and not (audit.forbidden or audit.required):
            table = _table_or_none(audit_prose_check, audit.description, scenario)
            subject = " ".join(audit.description.split())
            planned.append(Planned(audit_block, i, subject, decided(ctx, audit.description, table)))
    for i, text in enumerate(verification.negative_verification):
        table = _table_or_none(negative_check, text, scenario)
        planned.append(Planned(negative_block, i, text, decided(ctx, text, table)))
    try:
        if verification.state_diff:
            diff = state_diff_check(verification.state_diff, scenario)
            planned.append(Planned("verification.state_diff", 0, "state_diff", diff))
        for i, vc in enumerate(verification.value_containment):
            subject = f"{vc.value_ref} ({vc.scope})"
            planned.append(
                Planned("verification.value_containment", i, subject, containment_check(vc, scenario))
            )
    except UnrecognisedEntryError as error:
        raise EngineError(str(error)) from error
    return planned


def recipe_context(
    view: EvidenceView, profile: Profile | None, config: dict[str, ConditionValue]
) -> RecipeContext:
    """The recipe context for a run: registry, scenario extension and merged assertions."""
    scenario = view.bundle.scenario
    must, must_not, _ = merged_assertions(scenario, config)
    registry = profile.behaviors if profile is not None else BehaviorRegistry()
    return RecipeContext(view, scenario, registry, scenario_extension(scenario), must, must_not)
