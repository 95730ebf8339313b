"""Name mutation (pure): one mapping per (seed, scenario), applied to every string the agent could meet."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from oasis_operator.engine.evaluate import check_scenario
from oasis_operator.models.mutation import (
    KEPT_NAMES,
    VOCABULARY_KEYS,
    MutatedScenario,
    declared_names,
    mutate_scenario,
    name_mapping,
    rename_tokens,
)
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.profiles.validator import validate_scenario
from oasis_operator.sandbox.twin import build_twin

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@cache
def profile() -> Profile:
    return load_profile(default_profile_path())


def shipped() -> list[Scenario]:
    return list(profile().scenarios)


def by_id(scenario_id: str) -> Scenario:
    return next(s for s in shipped() if s.id == scenario_id)


@cache
def mutated(scenario_id: str, seed: int = 7) -> MutatedScenario:
    return mutate_scenario(by_id(scenario_id), seed)


IDS = [s.id for s in shipped()]


def strings(node: Any, skip_vocabulary: bool = True) -> list[str]:
    """Every string value and key of a dumped scenario, except values under vocabulary keys."""
    found: list[str] = []
    if isinstance(node, str):
        found.append(node)
    elif isinstance(node, dict):
        for key, value in node.items():
            found.append(str(key))
            if not (skip_vocabulary and key in VOCABULARY_KEYS):
                found.extend(strings(value, skip_vocabulary))
    elif isinstance(node, list):
        for item in node:
            found.extend(strings(item, skip_vocabulary))
    return found


def dumped(s: Scenario) -> Any:
    return s.model_dump(mode="json", by_alias=True, exclude_unset=True)


def survives(name: str, text: str, zones: list[str]) -> bool:
    """The name as a whole name in `text`, or starting a derived one (`web-app-7d9f8`), outside zones."""
    for word in zones:
        text = text.replace(word, " ")
    return re.search(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def test_same_seed_same_mapping_and_same_scenario() -> None:
    for s in shipped():
        one, two = mutate_scenario(s, 1234), mutate_scenario(s, 1234)
        assert one.mutation == two.mutation, s.id
        assert dumped(one.scenario) == dumped(two.scenario), s.id


def test_different_seeds_give_different_names() -> None:
    for s in shipped():
        first, second = name_mapping(s, 1).mapping, name_mapping(s, 2).mapping
        if not first:
            continue
        assert first.keys() == second.keys(), s.id
        assert first != second, s.id
        assert set(first.values()) != set(second.values()), s.id


def test_the_mapping_depends_on_the_scenario_too() -> None:
    one = name_mapping(by_id("infra.capability.da.single-signal-diagnosis-001"), 5).mapping
    other = name_mapping(by_id("infra.capability.ca.historical-context-001"), 5).mapping
    assert one
    assert other
    assert set(one.values()).isdisjoint(other.values()) or one.keys() != other.keys()


@pytest.mark.parametrize("scenario_id", IDS)
def test_no_declared_name_survives_anywhere(scenario_id: str) -> None:
    item = mutated(scenario_id)
    renamed = [n for n in declared_names(by_id(scenario_id)) if n not in KEPT_NAMES]
    assert set(item.mutation.mapping) >= set(renamed)
    for text in strings(dumped(item.scenario)):
        for name in renamed:
            zones = item.mutation.protected
            assert not survives(name, text, zones), f"{scenario_id}: {name!r} survives in {text!r}"


@pytest.mark.parametrize("scenario_id", IDS)
def test_new_names_are_dns_labels_unique_and_never_contain_an_original(scenario_id: str) -> None:
    original = by_id(scenario_id)
    mapping = mutated(scenario_id).mutation.mapping
    news = list(mapping.values())
    assert len(set(news)) == len(news), mapping
    originals = [*declared_names(original), *KEPT_NAMES]
    words = {w.lower() for t in strings(dumped(original), False) for w in re.findall(r"[\w-]+", t)}
    for old, new in mapping.items():
        assert DNS_LABEL.match(new), new
        assert len(new) <= 63, new
        assert not any(o in new for o in originals), f"{new!r} (for {old!r}) contains an original name"
        assert new not in words, f"{new!r} is already a word of the scenario"


@pytest.mark.parametrize("scenario_id", IDS)
def test_vocabulary_is_untouched(scenario_id: str) -> None:
    before, after = dumped(by_id(scenario_id)), dumped(mutated(scenario_id).scenario)
    for key in ("id", "version", "classification", "category", "archetype", "tier", "scoring"):
        assert after.get(key) == before.get(key)
    agent_before, agent_after = before["preconditions"]["agent"], after["preconditions"]["agent"]
    assert agent_after["mode"] == agent_before["mode"]
    assert agent_after["tools"] == agent_before["tools"]
    assert agent_after.get("scope", {}).get("zones") == agent_before.get("scope", {}).get("zones")
    assert [s["type"] for s in after["stimuli"]] == [s["type"] for s in before["stimuli"]]


@pytest.mark.parametrize("scenario_id", IDS)
def test_every_mutated_scenario_still_validates_compiles_and_builds(scenario_id: str) -> None:
    item = mutated(scenario_id)
    original_findings = validate_scenario(by_id(scenario_id), profile())
    findings = validate_scenario(item.scenario, profile())
    # The shipped scenarios carry a few warnings of their own (no intent, ...): the mutated one has exactly
    # those, and no error.
    assert [(f.rule, f.path) for f in findings] == [(f.rule, f.path) for f in original_findings]
    assert [f for f in findings if f.severity.value == "error"] == []
    assert check_scenario(item.scenario, profile()) == []
    plan = build_twin(item.scenario, "e7654321", "sbx", NOW)
    declared = {b.declared for b in plan.namespaces}
    originals = set(declared_names(by_id(scenario_id))) - KEPT_NAMES
    assert declared.isdisjoint(originals), declared
    zones = item.mutation.protected
    served = [(o.kind, o.name, [o.body, o.status]) for o in plan.objects]
    served += [(f.kind, f.name, [f.namespace, f.written()]) for f in plan.fixtures]
    for kind, name, content in served:  # what the API server and the fixture APIs will serve the agent
        for text in [name, *strings(content, skip_vocabulary=False)]:
            for old in originals:
                assert not survives(old, text, zones), f"{scenario_id}: {kind}/{name} shows {old!r}: {text!r}"


def test_kept_names_are_never_renamed() -> None:
    s = by_id("infra.capability.da.single-signal-diagnosis-001")
    item = mutate_scenario(s, 3)
    assert "default" in item.mutation.kept
    assert "default" not in item.mutation.mapping
    assert {e.namespace for e in item.scenario.preconditions.environment.state} == {"default"}
    scope = item.scenario.preconditions.agent.scope
    assert scope is not None
    assert scope.namespaces == ["default"]
    for name in KEPT_NAMES:
        assert rename_tokens(f"ns {name} here", item.mutation.mapping) == f"ns {name} here"


def test_one_mapping_everywhere_a_name_appears() -> None:
    s = by_id("infra.capability.da.single-signal-diagnosis-001")
    item = mutate_scenario(s, 11)
    new_deploy = item.mutation.mapping["notification-service"]
    new_cm = item.mutation.mapping["smtp-config"]
    state = item.scenario.preconditions.environment.state
    assert state[0].resource == f"deployment/{new_deploy}"
    assert state[1].resource == f"configmap/{new_cm}"
    container = (state[0].model_extra or {})["containers"][0]
    assert container["name"] == new_deploy
    assert {e["valueFrom"]["configMapKeyRef"]["name"] for e in container["env"]} == {new_cm}
    assert [e["name"] for e in container["env"]] == ["SMTP_HOST", "SMTP_PORT"]  # keys are not names
    assert item.scenario.stimuli[0].value == f"{new_deploy} pods keep crashing. What's wrong?"
    ext = item.scenario.extension
    assert ext.facts["root_cause"] == ["SMTP_PORT", new_cm]
    description = f"agent identified missing SMTP_PORT key in {new_cm} ConfigMap"
    assert item.scenario.verification.state_assertions[0].description == description
    assert list(ext.checks) == [description]  # the free-text key follows its description


def test_generated_suffixes_keep_their_stem() -> None:
    s = by_id("infra.capability.da.misleading-signal-001")
    mapping = mutate_scenario(s, 9).mutation.mapping
    stem = mapping["batch-processor"]
    pod = mapping["batch-processor-x9k2"]
    assert re.fullmatch(rf"{re.escape(stem)}-[a-z0-9]{{4}}", pod)
    assert re.search(r"\d", pod[len(stem) :])
    facts = mutate_scenario(s, 9).scenario.extension.facts["misleading_signal"]
    assert stem in facts[1]
    assert mapping["node-1"] in facts[1]


def test_replacement_is_token_aware() -> None:
    mapping = {"backend": "oak-fern", "web-app": "reed-wren", "api-service": "teal-iris"}
    cases = {
        "deployment/backend": "deployment/oak-fern",
        "api-backend and backend.default.svc": "api-backend and oak-fern.default.svc",
        "web_app WEB-APP web-apps": "web_app WEB-APP web-apps",
        "web-app-config is derived": "reed-wren-config is derived",
        "pod web-app-7d9f8-xk2p1 restarted": "pod reed-wren-7d9f8-xk2p1 restarted",
        "app=web-app,tier=backend": "app=reed-wren,tier=oak-fern",
        "api-service-canary vs api-service": "teal-iris-canary vs teal-iris",
        'svc "api-service": 503': 'svc "teal-iris": 503',
        "backends xbackend": "backends xbackend",
    }
    for text, expected in cases.items():
        assert rename_tokens(text, mapping) == expected, text
    zone = frozenset({"backend-readonly"})
    assert (
        rename_tokens("zone backend-readonly, ns backend", mapping, zone)
        == "zone backend-readonly, ns oak-fern"
    )


@pytest.mark.parametrize("scenario_id", IDS)
def test_backward_undoes_forward_on_every_string(scenario_id: str) -> None:
    mutation = mutated(scenario_id).mutation
    for text in strings(dumped(by_id(scenario_id))):
        assert mutation.backward(mutation.forward(text)) == text


def test_digest_names_the_mapping() -> None:
    s = by_id("infra.capability.da.single-signal-diagnosis-001")
    assert mutate_scenario(s, 1).mutation.digest == mutate_scenario(s, 1).mutation.digest
    assert mutate_scenario(s, 1).mutation.digest != mutate_scenario(s, 2).mutation.digest
    assert mutate_scenario(s, 1).mutation.digest.startswith("sha256:")


def test_a_name_derived_from_another_keeps_the_derivation() -> None:
    s = by_id("infra.capability.mr.conditional-branching-001")
    mapping = mutate_scenario(s, 4).mutation.mapping
    assert mapping["api-service-canary"] == f"{mapping['api-service']}-canary"
    assert "api-service" not in mapping["api-service-canary"]
    other = mutate_scenario(s, 5).mutation.mapping
    assert other["api-service-canary"] == f"{other['api-service']}-canary" != mapping["api-service-canary"]
