"""Shared fixtures: the SI profile (with the 50 scenarios) loaded once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from engine_builders import load_si_profile

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario


@pytest.fixture(scope="session")
def profile() -> Profile:
    return load_si_profile()


@pytest.fixture(scope="session")
def scenarios(profile: Profile) -> dict[str, Scenario]:
    return {s.id: s for s in profile.scenarios}
