"""Registered values are masked in every channel of every report format (engine.redact).

One value is planted in each channel the agent or the evidence can put text into: a tool call's arguments
(as written and base64-encoded), its result and error, the reasoning (base64), the final answer, an audit
entry's name and body, a stimulus the gateway applied, an agent failure's cause and a finding that quotes
the observed state. Every format (the verdict and the report in YAML and JSON, the HTML page, JUnit,
SARIF, Markdown) must show none of the value's forms and show the mask instead. A marker word planted
beside each value proves the channel does reach the format, so the test cannot pass on a channel that
is simply never shown.
"""

from __future__ import annotations

import base64

import pytest
from engine_builders import bundle, declared_states, entry

from oasis_operator.engine.ci import CI_FORMATS, CiContext, render_ci
from oasis_operator.engine.evaluate import LISTED_ACTIONS, evaluate_scenario
from oasis_operator.engine.redact import Redactor, marker
from oasis_operator.engine.render import render_html, render_json, render_yaml
from oasis_operator.engine.replay import run_info_from_bundles
from oasis_operator.engine.report import build_report
from oasis_operator.models.agent_failure import AgentFailure
from oasis_operator.models.evidence import EvidenceBundle, RegisteredValue, StimulusEvent, ToolAction
from oasis_operator.models.profile import Profile
from oasis_operator.models.verdict import Report

SECRET = "Zx9-planted-secret-42"
FINDING_SECRET = "Qm4-finding-secret-77"
FORMS = {
    SECRET,
    base64.b64encode(SECRET.encode()).decode(),
    base64.b64encode(SECRET.encode()).decode().rstrip("="),
    base64.urlsafe_b64encode(SECRET.encode()).decode(),
    FINDING_SECRET,
    base64.b64encode(FINDING_SECRET.encode()).decode(),
}
B64 = base64.b64encode(SECRET.encode()).decode()
LEAK = "infra.safety.de.direct-secret-request-001"
STATE = "infra.safety.br.cascading-impact-001"
# Marker words planted beside the value, by channel, and the formats each channel reaches.
EVERY_CHANNEL = {"ctx-args", "ctx-error", "ctx-reasoning", "ctx-answer", "ctx-audit-name", "ctx-stimulus"}
REACHES = {
    "report.yaml": EVERY_CHANNEL | {"ctx-failure", "ctx-finding"},
    "report.json": EVERY_CHANNEL | {"ctx-failure", "ctx-finding"},
    "report.html": EVERY_CHANNEL | {"ctx-failure", "ctx-finding"},
    "verdict.yaml": {"ctx-failure"},
    "verdict.json": {"ctx-failure"},
    "junit": {"ctx-failure", "ctx-finding"},
    "sarif": {"ctx-failure", "ctx-finding"},
    "markdown": {"ctx-failure", "ctx-finding"},
}


def _leaking_bundle(profile: Profile) -> EvidenceBundle:
    scenario = next(s for s in profile.scenarios if s.id == LEAK)
    values = [
        RegisteredValue(value_ref=v.value_ref, value=SECRET if "PASSWORD" in v.value_ref else "svc-user-9")
        for v in scenario.verification.value_containment
    ]
    recorded = bundle(
        scenario,
        [
            entry(
                0, "get", "secrets", f"ctx-audit-name-{SECRET}", request_body={"note": f"ctx-body {SECRET}"}
            ),
            entry(1, "create", "configmaps", "copy", request_body={"data": {"x": f"ctx-body {B64}"}}),
        ],
        actions=[
            ToolAction(
                tool="kubectl",
                arguments={"command": f"ctx-args {SECRET}", "encoded": f"ctx-args {B64}"},
                result={"stdout": f"ctx-result {B64}"},
                error=f"ctx-error {SECRET}",
                reasoning=f"ctx-action-reason {SECRET}",
            )
        ],
        answer=f"ctx-answer: the password is {SECRET}",
        reasoning=f"ctx-reasoning: decoded {B64}",
        values=values,
    )
    recorded.stimuli.append(
        StimulusEvent(
            time="2026-01-01T00:00:30Z",
            stimulus="stimuli[0]",
            trigger="at_start",
            detail=f"ctx-stimulus {SECRET}",
        )
    )
    return recorded.model_copy(update={"agent_failure": AgentFailure(cause=f"ctx-failure {SECRET}")})


def _state_bundle(profile: Profile) -> EvidenceBundle:
    """A run whose finding quotes the state the agent left: a configmap value set to the secret."""
    scenario = next(s for s in profile.scenarios if s.id == STATE)
    after = []
    for state in declared_states(scenario):
        obj = state.object
        if state.kind == "configmap" and isinstance(obj, dict):
            obj = {**obj, "data": dict.fromkeys(obj.get("data") or {}, f"ctx-finding {FINDING_SECRET}")}
        after.append(state.model_copy(update={"object": obj}))
    registered = [RegisteredValue(value_ref="planted/finding", value=FINDING_SECRET)]
    return bundle(scenario, after=after, values=registered)


@pytest.fixture(scope="module")
def report(profile: Profile) -> Report:
    bundles = [_leaking_bundle(profile), _state_bundle(profile)]
    results = [evaluate_scenario(b, profile) for b in bundles]
    assert any(FINDING_SECRET[:3] in c.detail or "ctx-finding" in c.detail for c in results[1].checks)
    return build_report(results, profile, run_info_from_bundles(bundles, 1))


def _formats(report: Report) -> dict[str, str]:
    out = {
        "report.yaml": render_yaml(report),
        "report.json": render_json(report),
        "report.html": render_html(report),
        "verdict.yaml": render_yaml(report.verdict),
        "verdict.json": render_json(report.verdict),
    }
    out.update({fmt: render_ci(report, fmt, CiContext("default/masked")) for fmt in CI_FORMATS})
    return out


def test_every_format_masks_the_value_planted_in_every_channel(report: Report) -> None:
    rendered = _formats(report)
    assert set(rendered) == set(REACHES)
    for name, text in rendered.items():
        shown = {form for form in FORMS if form in text}
        assert not shown, f"{name} shows {shown}"
        assert "[masked: " in text, f"{name} carries no mask"
        missing = {word for word in REACHES[name] if word not in text}
        assert not missing, f"{name} no longer shows the channels {missing}: the test would prove nothing"


def test_the_mask_names_the_value_reference_not_the_value(report: Report) -> None:
    html = render_html(report)
    assert marker("secret/db-credentials.data.DB_PASSWORD") in render_json(report)
    assert "[masked: planted/finding]" in html
    leak = next(r for r in report.scenarios if r.scenario_id == LEAK)
    assert (
        leak.final_answer_excerpt
        == "ctx-answer: the password is [masked: secret/db-credentials.data.DB_PASSWORD]"
    )
    assert leak.agent_actions[0].startswith("kubectl {")
    assert "ctx-args [masked: secret/db-credentials.data.DB_PASSWORD]" in leak.agent_actions[0]


def test_a_value_cut_by_an_excerpt_shows_none_of_its_leading_part(profile: Profile) -> None:
    recorded = _leaking_bundle(profile)
    padding = "x " * 195  # the value starts just before the 400-character excerpt is cut
    transcript = recorded.transcript.model_copy(update={"final_answer": padding + SECRET + " and more text"})
    result = evaluate_scenario(recorded.model_copy(update={"transcript": transcript}), profile)
    # Masked before it was cut: the cut falls in the mask, not in the value.
    assert result.final_answer_excerpt.endswith(" [masked: …")
    assert SECRET[:4] not in result.final_answer_excerpt
    redactor = Redactor({"ref": SECRET})
    assert redactor.text(f"value {SECRET[:9]}…") == "value [masked: ref]…"
    assert redactor.text(f"value {SECRET[:9]}...") == "value [masked: ref]..."
    assert redactor.text("nothing cut here…") == "nothing cut here…"


def test_a_short_value_is_masked_only_as_a_whole_token() -> None:
    redactor = Redactor({"secret/x.data.user": "admin"})
    assert (
        redactor.text("bound to cluster-admin as admin")
        == "bound to cluster-admin as [masked: secret/x.data.user]"
    )
    encoded = base64.b64encode(b"admin").decode()
    assert redactor.text(f"data: {encoded}") == "data: [masked: secret/x.data.user]"


def test_json_escaping_does_not_hide_a_value_in_tool_arguments(profile: Profile) -> None:
    quoted = 'pa"ss\\word-value-9'
    recorded = _leaking_bundle(profile)
    containment = recorded.containment
    assert containment is not None
    values = [
        v.model_copy(update={"value": quoted}) if "PASSWORD" in v.value_ref else v for v in containment.values
    ]
    action = ToolAction(tool="kubectl", arguments={"command": f"echo {quoted}"})
    recorded = recorded.model_copy(
        update={
            "containment": containment.model_copy(update={"values": values}),
            "transcript": recorded.transcript.model_copy(update={"actions": [action]}),
        }
    )
    result = evaluate_scenario(recorded, profile)
    assert result.agent_actions == [
        'kubectl {"command": "echo [masked: secret/db-credentials.data.DB_PASSWORD]"}'
    ]


def test_a_result_lists_at_most_its_bound_of_tool_calls_and_counts_them_all(profile: Profile) -> None:
    recorded = _leaking_bundle(profile)
    actions = [
        ToolAction(tool="kubectl", arguments={"command": f"get pods #{i}"}) for i in range(LISTED_ACTIONS + 5)
    ]
    recorded = recorded.model_copy(
        update={"transcript": recorded.transcript.model_copy(update={"actions": actions})}
    )
    result = evaluate_scenario(recorded, profile)
    assert result.tool_calls == LISTED_ACTIONS + 5
    assert len(result.agent_actions) == LISTED_ACTIONS + 1
    assert result.agent_actions[-1] == "… 5 more tool calls not listed (the evidence bundle has them)"
