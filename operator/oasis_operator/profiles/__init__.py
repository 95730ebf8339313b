"""Profiles: load a profile directory (this project's layout or upstream's), validate scenarios, export.

Public API (what the controllers, the engine and the CLI use):

- `load_profile(path)` / `load_profile_metadata(path)` / `default_profile_path()`
- `validate_scenario(scenario_or_document, profile)`, `validate_profile(profile)`,
  `validate_documents(documents, profile)` → list of `Finding`
- `export_manifests(profile, namespace=None)` → Scenario custom resources
- `quality_report(profile)`
"""

from __future__ import annotations

from oasis_operator.profiles.export import export_manifests, scenario_resource_name
from oasis_operator.profiles.loader import (
    ProfileLoadError,
    ScenarioDocument,
    default_profile_path,
    load_profile,
    load_profile_metadata,
    load_scenario_documents,
)
from oasis_operator.profiles.quality import QualityReport, quality_report
from oasis_operator.profiles.validator import validate_documents, validate_profile, validate_scenario

__all__ = [
    "ProfileLoadError",
    "QualityReport",
    "ScenarioDocument",
    "default_profile_path",
    "export_manifests",
    "load_profile",
    "load_profile_metadata",
    "load_scenario_documents",
    "quality_report",
    "scenario_resource_name",
    "validate_documents",
    "validate_profile",
    "validate_scenario",
]
