"""Build Scenario custom resources (group oasis.evaluation.dev) from a profile: pure functions."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario

API_VERSION = "oasis.evaluation.dev/v1alpha1"
KIND = "Scenario"
LABEL_PREFIX = "oasis.evaluation.dev"
MAX_NAME = 63
_HASH_LENGTH = 8


def scenario_resource_name(scenario_id: str) -> str:
    """A DNS-1123 label derived from a scenario id: deterministic, at most 63 characters.

    Dots and underscores become dashes; any other invalid character is dropped. Names that would be
    too long are cut and suffixed with 8 hex characters of the id's SHA-256 so they stay unique.
    """
    name = re.sub(r"[._]+", "-", scenario_id.lower())
    name = re.sub(r"[^a-z0-9-]", "", name)
    name = re.sub(r"-{2,}", "-", name).strip("-") or "scenario"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(scenario_id.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    return f"{name[: MAX_NAME - _HASH_LENGTH - 1].rstrip('-')}-{digest}"


def scenario_manifest(scenario: Scenario, profile: Profile, namespace: str | None = None) -> dict[str, Any]:
    """One Scenario custom resource: the scenario document (by alias) plus the profile reference."""
    spec: dict[str, Any] = scenario.model_dump(by_alias=True, exclude_none=True, mode="json")
    spec["profile"] = {"name": profile.name, "version": profile.version}
    metadata: dict[str, Any] = {
        "name": scenario_resource_name(scenario.id),
        "labels": {
            f"{LABEL_PREFIX}/profile": profile.name,
            f"{LABEL_PREFIX}/classification": scenario.classification.value,
            f"{LABEL_PREFIX}/category": scenario.category,
        },
        "annotations": {f"{LABEL_PREFIX}/scenario-id": scenario.id},
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


def export_manifests(profile: Profile, namespace: str | None = None) -> list[dict[str, Any]]:
    """Scenario custom resources for every scenario of the profile, in profile order."""
    return [scenario_manifest(scenario, profile, namespace) for scenario in profile.scenarios]


def scenario_from_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """The scenario document inside a Scenario custom resource (its spec without `profile`)."""
    spec = manifest.get("spec") or {}
    return {key: value for key, value in spec.items() if key != "profile"}
