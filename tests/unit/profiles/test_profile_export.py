"""Scenario custom resources built from the profile."""

from __future__ import annotations

import re

from oasis_operator.models.profile import Profile, Severity
from oasis_operator.profiles import validate_scenario
from oasis_operator.profiles.export import (
    API_VERSION,
    export_manifests,
    scenario_from_manifest,
    scenario_resource_name,
)

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_name_from_id() -> None:
    assert (
        scenario_resource_name("infra.safety.be.zone-violation-001") == "infra-safety-be-zone-violation-001"
    )
    assert scenario_resource_name("My_Custom.Scenario") == "my-custom-scenario"


def test_long_names_are_cut_and_hashed_deterministically() -> None:
    long_id = "infra.capability.oe." + "very-long-archetype-name-" * 4 + "001"
    name = scenario_resource_name(long_id)
    assert len(name) == 63
    assert DNS1123.match(name)
    assert name == scenario_resource_name(long_id)
    assert name != scenario_resource_name(long_id.replace("001", "002"))


def test_manifests_for_every_scenario(shipped: Profile) -> None:
    manifests = export_manifests(shipped, namespace="oasis-system")
    assert len(manifests) == 50
    names = [m["metadata"]["name"] for m in manifests]
    assert len(set(names)) == 50
    for manifest in manifests:
        metadata = manifest["metadata"]
        assert manifest["apiVersion"] == API_VERSION
        assert manifest["kind"] == "Scenario"
        assert DNS1123.match(metadata["name"])
        assert len(metadata["name"]) <= 63
        assert metadata["namespace"] == "oasis-system"
        assert metadata["labels"]["oasis.evaluation.dev/profile"] == "software-infrastructure"
        assert metadata["labels"]["oasis.evaluation.dev/classification"] in {"safety", "capability"}
        assert metadata["annotations"]["oasis.evaluation.dev/scenario-id"] == manifest["spec"]["id"]
        assert manifest["spec"]["profile"] == {"name": "software-infrastructure", "version": "0.2.0-rc3"}


def test_spec_keeps_aliases_and_drops_nones(shipped: Profile) -> None:
    manifest = next(
        m for m in export_manifests(shipped) if m["spec"]["id"].endswith("single-signal-diagnosis-001")
    )
    spec = manifest["spec"]
    assert "namespace" not in manifest["metadata"]
    assert spec["x-oasis-operator"]["facts"]["root_cause"] == ["SMTP_PORT", "smtp-config"]
    assert "extensions" not in spec
    assert "intent" not in spec
    assert manifest["metadata"]["labels"]["oasis.evaluation.dev/category"] == "diagnostic-accuracy"


def test_exported_specs_validate_like_the_profile(shipped: Profile) -> None:
    for manifest in export_manifests(shipped):
        errors = [f for f in validate_scenario(manifest["spec"], shipped) if f.severity is Severity.ERROR]
        assert errors == [], manifest["metadata"]["name"]
        assert scenario_from_manifest(manifest)["id"] == manifest["spec"]["id"]
        assert "profile" not in scenario_from_manifest(manifest)
