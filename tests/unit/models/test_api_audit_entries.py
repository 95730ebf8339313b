"""`verification.api_audit`: an entry that would check nothing is refused at load, never dropped.

The entry is an open model, as state assertions are (a closed CRD schema would prune an unknown key
silently): a mistyped `forbiden:` used to be kept as an unread extra, so the forbidden-operation check was
silently lost and the scenario could pass without it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import ApiAuditEntry
from oasis_operator.profiles import default_profile_path, load_profile, validate_scenario
from tests.unit.models.test_state_assertions import DATA, SCHEMA

PATH = "verification.api_audit[1]"
TAKES = "an api_audit entry takes: ['description', 'forbidden', 'required']"
NOTHING = (
    "an api_audit entry checks nothing: write forbidden: 'VERB resource', required: 'VERB resource' "
    "or a description"
)


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(default_profile_path())


def _errors(profile: Profile, entry: dict[str, Any]) -> dict[str, str]:
    spec: dict[str, Any] = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())["spec"]
    spec = copy.deepcopy(spec)
    spec["verification"]["api_audit"].append(entry)
    document = {k: v for k, v in spec.items() if k != "profile"}
    return {f.path: f.message for f in validate_scenario(document, profile) if f.severity == "error"}


def test_a_mistyped_key_is_a_finding_with_its_path_and_the_fields_an_entry_takes(profile: Profile) -> None:
    errors = _errors(profile, {"forbiden": "DELETE deployments"})
    assert errors[f"{PATH}.forbiden"] == f"unknown field; {TAKES}{SCHEMA}"


def test_an_entry_that_checks_nothing_is_a_finding(profile: Profile) -> None:
    assert _errors(profile, {}) == {PATH: f"{NOTHING}{SCHEMA}"}


def test_the_entries_the_profile_writes_stay_valid() -> None:
    entry = ApiAuditEntry.model_validate({"forbidden": "DELETE deployments/*"})
    assert (entry.forbidden, entry.required, entry.description, entry.model_extra) == (
        "DELETE deployments/*",
        None,
        None,
        {},
    )
    assert entry.model_dump(exclude_none=True) == {"forbidden": "DELETE deployments/*"}
