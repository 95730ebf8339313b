"""`verification.state_assertions`: typed checks, refused at load with the field path and what to write.

Before, the checks were extra keys read as a dict at judging time, so a typo (`replica: 3`) or a wrong type
raised while the scenario was being judged. Now the Scenario is invalid (`Valid=False`), planning refuses
it, and the engine reads attributes. An entry dumps as written, so recorded bundles keep their bytes.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from oasis_operator.engine.statecheck import structured_state_check
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import STATE_CHECK_FIELDS, Scenario, StateAssertion
from oasis_operator.profiles import default_profile_path, load_profile, validate_scenario
from oasis_operator.status.scenario import scenario_status

DATA = Path(__file__).resolve().parents[2] / "data"
ENTRY = {"resource": "deployment/invoice-api", "namespace": "billing"}
PATH = "verification.state_assertions[1]"
TAKES = (
    "a state assertion takes: ['condition', 'data', 'description', 'image', 'labels', 'namespace', "
    "'replicas', 'resource', 'status', 'sync_status']"
)
SCHEMA = "; fix the field to match the scenario schema (Scenarios §1)"
SHAPES: tuple[Any, ...] = ("x", "running", 7, -1, 2.5, True, [], ["a"], {}, {"a": 1}, {"a": "1"})


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(default_profile_path())


@cache
def _cr_spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())["spec"]
    return spec


def _document(*entries: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(_cr_spec())
    spec["verification"]["state_assertions"] += list(entries)
    return {k: v for k, v in spec.items() if k != "profile"}


def _errors(profile: Profile, entry: dict[str, Any]) -> dict[str, str]:
    findings = validate_scenario(_document(entry), profile)
    return {f.path: f.message for f in findings if f.severity == "error"}


# (field, wrong value, the exact message after the field path)
WRONG = [
    ("replicas", "3", "write a whole number of replicas, e.g. replicas: 3, not '3'"),
    ("replicas", -1, "write a whole number of replicas, e.g. replicas: 3, not -1"),
    ("replicas", True, "write a whole number of replicas, e.g. replicas: 3, not True"),
    ("data", {"FEATURE_FLAG": False}, "write a mapping of keys to quoted strings, e.g. LOG_LEVEL: 'info', "
     "not {'FEATURE_FLAG': False}"),
    ("data", ["LOG_LEVEL"], "write a mapping of keys to quoted strings, e.g. LOG_LEVEL: 'info', "
     "not ['LOG_LEVEL']"),
    ("image", 3, "write an image reference, e.g. image: api-service:v1.2.3, not 3"),
    ("labels", {"app": 1}, "write a mapping of label keys to quoted strings, e.g. app: web, not {'app': 1}"),
    ("status", "stopped", "write status: running (the one status a state assertion checks), not 'stopped'"),
    ("sync_status", ["synced"], "write a GitOps sync status, e.g. sync_status: synced, not ['synced']"),
]  # fmt: skip


@pytest.mark.parametrize(("field", "value", "message"), WRONG)
def test_a_wrong_type_is_a_finding_with_the_field_path_and_what_to_write(
    profile: Profile, field: str, value: Any, message: str
) -> None:
    assert _errors(profile, {**ENTRY, field: value}) == {f"{PATH}.{field}": message + SCHEMA}


def test_every_check_field_has_a_wrong_type_case() -> None:
    assert {field for field, *_ in WRONG} == STATE_CHECK_FIELDS


def test_an_unknown_key_is_a_finding_that_lists_the_fields_a_state_assertion_takes(profile: Profile) -> None:
    assert _errors(profile, {**ENTRY, "replica": 2}) == {f"{PATH}.replica": f"unknown field; {TAKES}{SCHEMA}"}


def test_a_scenario_resource_with_a_bad_state_assertion_is_not_valid() -> None:
    spec = copy.deepcopy(_cr_spec())
    spec["verification"]["state_assertions"].append({**ENTRY, "replicas": "three"})
    status = scenario_status(spec, 1, [], "2026-12-01T00:00:00Z")
    valid = status.conditions[0]
    assert (valid.type, valid.status.value, valid.reason) == ("Valid", "False", "ValidationFailed")
    assert valid.message == (
        "spec.verification.state_assertions[1].replicas: "
        "write a whole number of replicas, e.g. replicas: 3, not 'three'"
    )


def test_the_checks_are_attributes_and_unset_ones_are_not_written() -> None:
    written = {**ENTRY, "condition": "exists", "replicas": 3, "data": {"LOG_LEVEL": "info"}}
    entry = StateAssertion.model_validate(written)
    assert (entry.replicas, entry.data, entry.image, entry.status) == (3, {"LOG_LEVEL": "info"}, None, None)
    assert entry.checks()
    assert entry.model_dump(exclude_none=True) == written
    assert entry.model_dump() == {**written, "description": None}  # the fields it always had keep `null`
    assert not StateAssertion.model_validate(ENTRY).checks()


def test_an_explicit_null_check_is_kept_as_written() -> None:
    assert StateAssertion.model_validate({**ENTRY, "image": None}).model_dump(exclude={"condition"}) == {
        **ENTRY,
        "description": None,
        "image": None,
    }


@pytest.mark.parametrize("field", sorted(STATE_CHECK_FIELDS))
def test_every_value_of_every_check_field_is_refused_at_load_or_planned(profile: Profile, field: str) -> None:
    # A state assertion the validator lets through never raises while its check is being compiled.
    planned = refused = 0
    for value in SHAPES:
        document = _document({**ENTRY, "condition": "exists", field: value})
        if any(f.severity == "error" for f in validate_scenario(document, profile)):
            refused += 1
            continue
        scenario = Scenario.model_validate(document)
        check = structured_state_check(scenario.verification.state_assertions[1], scenario)
        assert check.method == "state"
        planned += 1
    assert planned, field
    assert refused, field
