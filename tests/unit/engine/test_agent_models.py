"""Declared and observed models: heterogeneity as a pure function of the results, the model of each answer
kept through the bundle so a replay finds the same, and the declaration in the verdict and report header."""

from __future__ import annotations

import json
from pathlib import Path

from engine_builders import bundle

from oasis_operator.engine.agent_models import agent_models
from oasis_operator.engine.ci import CiContext, render_ci
from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.render import render_html, render_json, render_yaml
from oasis_operator.engine.replay import replay_report
from oasis_operator.models.agent_identity import AgentIdentity, ModelUse
from oasis_operator.models.evidence import AgentRecord, EvidenceBundle
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioOutcome, ScenarioResult
from oasis_operator.models.scenario import Scenario
from oasis_operator.models.verdict import Report
from tests.unit.engine.test_aggregate import safety

ZONE = "infra.safety.be.zone-violation-001"
CASCADE = "infra.safety.do.cascading-deletion-001"
DECLARING = AgentIdentity.model_validate(
    {
        "name": "llm-agent",
        "version": "3.1.0",
        "binary_version": "3.1.0+build.7",
        "binary_digest": "sha256:" + "ab" * 32,
        "config_hash": "sha256:" + "cd" * 32,
        "system_prompt_hash": "sha256:" + "ef" * 32,
        "model": "model-a",
        "provider": "provider-x",
        "wrapper_text": "Task: <prompt> & be careful",
        "temperature": 0.2,
    }
)


def _with_model(
    sid: str, model: str | None, outcome: ScenarioOutcome = ScenarioOutcome.PASS
) -> ScenarioResult:
    return safety(sid, outcome, agent_model=model)


def test_one_model_throughout_is_not_heterogeneous() -> None:
    models = agent_models("model-a", [_with_model("a", "model-a"), _with_model("b", "model-a")])
    assert models.observed == [ModelUse(model="model-a", scenarios=2)]
    assert (models.unreported, models.heterogeneous) == (0, False)


def test_two_observed_models_are_heterogeneous_most_used_first() -> None:
    results = [_with_model("a", "model-b"), _with_model("b", "model-a"), _with_model("c", "model-b")]
    models = agent_models(None, results)
    assert models.observed == [ModelUse(model="model-b", scenarios=2), ModelUse(model="model-a", scenarios=1)]
    assert models.heterogeneous is True


def test_one_observed_model_other_than_the_declared_is_heterogeneous() -> None:
    models = agent_models("model-a", [_with_model("a", "model-b"), _with_model("b", "model-b")])
    assert models.heterogeneous is True


def test_answers_naming_no_model_are_counted_but_are_no_evidence_of_a_difference() -> None:
    models = agent_models("model-a", [_with_model("a", None), _with_model("b", "model-a")])
    assert (models.unreported, models.heterogeneous) == (1, False)
    silent = agent_models("model-a", [_with_model("a", None), _with_model("b", None)])
    assert (silent.observed, silent.unreported, silent.heterogeneous) == ([], 2, False)


def test_not_applicable_scenarios_had_no_answer_and_count_nowhere() -> None:
    models = agent_models(
        None, [_with_model("a", None, ScenarioOutcome.NOT_APPLICABLE), _with_model("b", "m")]
    )
    assert (models.unreported, [u.model for u in models.observed]) == (0, ["m"])


def test_the_order_of_results_does_not_change_the_models() -> None:
    results = [_with_model("a", "x"), _with_model("b", "y"), _with_model("c", "y"), _with_model("d", None)]
    assert agent_models("x", results) == agent_models("x", list(reversed(results)))


def _bundle(scenario: Scenario, model: str | None, identity: AgentIdentity = DECLARING) -> EvidenceBundle:
    item = bundle(scenario)
    agent = AgentRecord(identity=identity, configuration={}, kube_user=item.agent.kube_user)
    transcript = item.transcript.model_copy(update={"model": model})
    return item.model_copy(update={"agent": agent, "transcript": transcript})


def test_the_answers_model_is_in_the_bundle_and_the_result(scenarios: dict[str, Scenario]) -> None:
    item = _bundle(scenarios[ZONE], "model-a")
    text = item.to_json()
    assert json.loads(text)["transcript"]["model"] == "model-a"
    assert json.loads(text)["agent"]["identity"]["additional"] == {"temperature": 0.2}
    assert EvidenceBundle.model_validate_json(text).to_json() == text
    assert evaluate_scenario(EvidenceBundle.model_validate_json(text)).agent_model == "model-a"


def test_an_answer_without_a_model_leaves_the_bundle_and_result_as_before(
    scenarios: dict[str, Scenario],
) -> None:
    item = bundle(scenarios[ZONE])
    assert "model" not in json.loads(item.to_json())["transcript"]
    result = evaluate_scenario(item)
    assert result.agent_model is None
    assert "agent_model" not in result.model_dump(mode="json")


def _replayed(
    tmp_path: Path, scenarios: dict[str, Scenario], profile: Profile, models: list[str | None]
) -> Report:
    for sid, model in zip((ZONE, CASCADE), models, strict=True):
        (tmp_path / f"{sid}.json").write_text(_bundle(scenarios[sid], model).to_json(), encoding="utf-8")
    return replay_report([tmp_path], profile)


def test_replay_of_bundles_with_different_models_flags_the_verdict_heterogeneous(
    tmp_path: Path, scenarios: dict[str, Scenario], profile: Profile
) -> None:
    report = _replayed(tmp_path, scenarios, profile, ["model-a", "model-b"])
    meta = report.verdict.metadata
    assert meta.agent_models.heterogeneous is True
    assert [u.model for u in meta.agent_models.observed] == ["model-a", "model-b"]
    assert meta.agent_declaration.model == "model-a"
    assert meta.agent_declaration.binary_digest == "sha256:" + "ab" * 32
    assert meta.agent_declaration.additional == {"temperature": 0.2}
    assert {r.scenario_id: r.agent_model for r in report.scenarios} == {ZONE: "model-a", CASCADE: "model-b"}
    assert "Heterogeneous models" in report.statements["agent_models"]
    document = report.verdict.document()["verdict"]["metadata"]
    assert document["agent_models"]["heterogeneous"] is True
    assert document["agent_declaration"]["wrapper_text"] == "Task: <prompt> & be careful"
    assert render_json(report) == render_json(_replayed(tmp_path, scenarios, profile, ["model-a", "model-b"]))


def test_report_header_shows_the_declaration_and_warns_of_heterogeneous_models(
    tmp_path: Path, scenarios: dict[str, Scenario], profile: Profile
) -> None:
    report = _replayed(tmp_path, scenarios, profile, ["model-a", "model-b"])
    html = render_html(report)
    head = html[: html.index("<h2>Environment</h2>")]
    assert '<span class="incomplete">HETEROGENEOUS MODELS</span> Heterogeneous models:' in head
    assert "<h2>Agent declaration</h2>" in head
    for shown in ("3.1.0+build.7", "sha256:" + "ab" * 32, "sha256:" + "cd" * 32, "provider-x", "model-a"):
        assert shown in head
    assert "<pre>Task: &lt;prompt&gt; &amp; be careful</pre>" in head
    assert "&quot;temperature&quot;: 0.2" in head
    assert "declared model-a; model-a (1 scenario), model-b (1 scenario)" in head
    yaml_text = render_yaml(report)
    assert "heterogeneous: true" in yaml_text
    assert "agent_models: 'Heterogeneous models:" in yaml_text
    markdown = render_ci(report, "markdown", CiContext())
    assert (
        "> **Warning:** Heterogeneous models: the agent's answers did not all come from one model" in markdown
    )
    assert "| Declared model | model-a |" in markdown
    assert "| Model provider | provider-x |" in markdown
    assert "| Wrapper text | Task: &lt;prompt&gt; & be careful |" in markdown
    assert "| Models observed | model-a (1 scenario), model-b (1 scenario); heterogeneous |" in markdown
    junit = render_ci(report, "junit", CiContext())
    assert '<property name="oasis.agent.model" value="model-a" />' in junit
    assert '<property name="oasis.agent.models.heterogeneous" value="true" />' in junit
    sarif = json.loads(render_ci(report, "sarif", CiContext()))
    assert sarif["runs"][0]["invocations"][0]["properties"]["agentModels"] == {
        "declared": "model-a",
        "observed": ["model-a", "model-b"],
        "heterogeneous": True,
    }


def test_report_of_an_agent_that_declares_nothing_has_no_warning(
    tmp_path: Path, scenarios: dict[str, Scenario], profile: Profile
) -> None:
    plain = AgentIdentity(name="plain", version="1")
    for sid in (ZONE, CASCADE):
        (tmp_path / f"{sid}.json").write_text(
            _bundle(scenarios[sid], None, plain).to_json(), encoding="utf-8"
        )
    report = replay_report([tmp_path], profile)
    assert report.verdict.metadata.agent_models.model_dump() == {
        "declared": None,
        "observed": [],
        "unreported": 2,
        "heterogeneous": False,
    }
    assert "agent_models" not in report.statements
    html = render_html(report)
    assert "HETEROGENEOUS" not in html
    assert "The agent declared nothing beyond its name and version." in html
    markdown = render_ci(report, "markdown", CiContext())
    assert "Warning" not in markdown
    assert "| Models observed | no answer named a model; 2 named none |" in markdown
    assert "Declared model" not in markdown
