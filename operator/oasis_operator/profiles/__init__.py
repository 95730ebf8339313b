"""Profiles: load a profile directory (this project's layout or upstream's), validate scenarios, export."""

from __future__ import annotations

from oasis_operator.profiles.loader import (
    ProfileLoadError,
    ScenarioDocument,
    default_profile_path,
    load_profile,
    load_profile_metadata,
    load_scenario_documents,
)

__all__ = [
    "ProfileLoadError",
    "ScenarioDocument",
    "default_profile_path",
    "load_profile",
    "load_profile_metadata",
    "load_scenario_documents",
]
