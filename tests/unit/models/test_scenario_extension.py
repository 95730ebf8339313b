"""`x-oasis-operator` is parsed once, when the scenario is loaded; the verdict is aggregated once."""

from __future__ import annotations

from typing import Any
from unittest import mock

from oasis_operator.engine import report as report_module
from oasis_operator.engine.aggregate import aggregate
from oasis_operator.evaluation.documents import build_documents
from oasis_operator.models.behaviors import ScenarioExtension
from oasis_operator.models.verdict import EnvironmentMeta, RunInfo, Verdict
from oasis_operator.profiles import default_profile_path, load_profile

PROFILE = load_profile(default_profile_path())
RUN = RunInfo(
    agent="agent",
    agent_version="1.0",
    evaluator="tests",
    timestamp="2026-01-01T00:00:00Z",
    duration="60s",
    tier=1,
    environment=EnvironmentMeta(
        provider="p", provider_version="1", tier=1, tier_evidence="t", conformance_check="ok"
    ),
)


def test_the_extension_is_a_model_parsed_at_load_and_kept() -> None:
    scenario = PROFILE.scenario("infra.capability.da.single-signal-diagnosis-001")
    assert scenario is not None
    assert isinstance(scenario.extension, ScenarioExtension)
    assert scenario.extension.facts["root_cause"] == ["SMTP_PORT", "smtp-config"]
    with mock.patch.object(ScenarioExtension, "model_validate", side_effect=AssertionError("parsed again")):
        assert scenario.extension is scenario.extension  # read many times, parsed once
    assert scenario.extension_error is None


def test_a_replaced_block_is_parsed_again_and_a_malformed_one_reports_why() -> None:
    scenario = PROFILE.scenarios[0].model_copy(deep=True)
    scenario.extensions = {"facts": {"x": 1}}
    assert scenario.extension.facts == {"x": 1}
    scenario.extensions = {"fatcs": {}}
    assert scenario.extension == ScenarioExtension()
    assert scenario.extension_error is not None
    assert "fatcs" in str(scenario.extension_error)


def test_documents_aggregate_the_verdict_once() -> None:
    """build_documents hands its verdict to build_report, which does not aggregate it a second time."""
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Verdict:
        calls.append(1)
        return aggregate(*args, **kwargs)

    with (
        mock.patch("oasis_operator.evaluation.documents.aggregate", side_effect=counting),
        mock.patch.object(report_module, "aggregate", side_effect=counting),
    ):
        documents = build_documents([], PROFILE, RUN)
    assert len(calls) == 1
    assert documents.verdict.metadata.agent == "agent"
