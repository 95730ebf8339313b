"""Shared helpers and fixtures: the shipped profile, the upstream copy, scenario documents to mutate."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from oasis_operator.models.profile import Profile
from oasis_operator.profiles import load_profile

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "profiles" / "software-infrastructure"
UPSTREAM = REPO.parent / "shared" / "reference" / "oasis-spec" / "profiles" / "software-infrastructure"
if not UPSTREAM.is_dir():
    UPSTREAM = Path("/work/shared/reference/oasis-spec/profiles/software-infrastructure")


@pytest.fixture(scope="session")
def shipped() -> Profile:
    """The profile this project ships."""
    return load_profile(SHIPPED)


@pytest.fixture(scope="session")
def upstream() -> Profile:
    """The upstream reference copy, read unchanged."""
    if not UPSTREAM.is_dir():
        pytest.skip("upstream reference copy not available")
    return load_profile(UPSTREAM)


def scenario_doc(profile: Profile, scenario_id: str) -> dict[str, Any]:
    """A deep copy of a shipped scenario as a plain document (by alias), safe to mutate."""
    scenario = profile.scenario(scenario_id)
    assert scenario is not None, scenario_id
    return copy.deepcopy(scenario.model_dump(by_alias=True, exclude_none=True, mode="json"))
