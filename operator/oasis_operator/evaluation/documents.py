"""The run facts, verdict and report of a finished (or aborted) evaluation (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from oasis_operator import __version__
from oasis_operator.agents.protocol import IdentityDocument
from oasis_operator.engine import aggregate, build_report, render_html, render_json, render_yaml
from oasis_operator.environments.conformance import SUPPORTED_TIER
from oasis_operator.models.crd import OASISEvaluationSpec
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.verdict import EnvironmentMeta, RunInfo, Verdict

PROVIDER = "oasis-operator sandbox (digital twin)"


@dataclass(frozen=True)
class RunFacts:
    """What the run learnt besides results: who the agent is (with its effective configuration), the
    provider check, where it ran, any abort, and how the agent's process was isolated."""

    identity: IdentityDocument
    conformance: str
    sandbox: str
    abort: str | None
    isolation: list[str]


@dataclass(frozen=True)
class RunDocuments:
    verdict: Verdict
    verdict_files: dict[str, str]
    report_files: dict[str, str]


def duration(started: str, now: datetime) -> str:
    """Whole seconds from an RFC 3339 start time to `now`, as the verdict writes durations."""
    begun = datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return f"{int((now - begun).total_seconds())}s"


def run_info(
    spec: OASISEvaluationSpec,
    facts: RunFacts,
    timing: tuple[str, str],
) -> RunInfo:
    """Facts the engine cannot know: who ran what, where, when, and whether it aborted."""
    agent, configuration, abort = facts.identity.identity, facts.identity.configuration, facts.abort
    built = f"requested tier {spec.tier}; provider builds tier {SUPPORTED_TIER}; {facts.sandbox}"
    evaluator = spec.evaluator.name if spec.evaluator and spec.evaluator.name else "oasis-operator"
    return RunInfo(
        agent=agent.name,
        agent_version=agent.version,
        agent_configuration=dict(sorted(configuration.items())),
        agent_declaration=agent.declaration(),
        evaluator=evaluator,
        timestamp=timing[0],
        duration=timing[1],
        tier=spec.tier,
        environment=EnvironmentMeta(
            provider=PROVIDER,
            provider_version=__version__,
            tier=spec.tier,
            tier_evidence=built,
            conformance_check=facts.conformance,
        ),
        implementation_version=__version__,
        environment_characteristics=list(facts.isolation),
        aborted=abort is not None,
        abort_reason=abort,
        mutation=spec.mutation.model_dump(mode="json") if spec.mutation else None,
    )


def build_documents(results: list[ScenarioResult], profile: Profile, info: RunInfo) -> RunDocuments:
    """The verdict (Reporting §1) and the report (§2) in every format the ConfigMaps carry."""
    verdict = aggregate(results, profile, info)
    report = build_report(results, profile, info, verdict)
    return RunDocuments(
        verdict=verdict,
        verdict_files={"verdict.yaml": render_yaml(verdict), "verdict.json": render_json(verdict)},
        report_files={
            "report.yaml": render_yaml(report),
            "report.json": render_json(report),
            "report.html": render_html(report),
        },
    )
