"""Agent identity and configuration (Execution §3 step 2): validate, apply defaults, record (pure)."""

from __future__ import annotations

from typing import Any

from oasis_operator.engine import effective_configuration
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import ConditionValue


class ConfigurationError(ValueError):
    """The agent reported a configuration the profile's schema does not allow."""


def validate_configuration(profile: Profile, reported: dict[str, Any]) -> dict[str, ConditionValue]:
    """The effective configuration: reported values checked against the schema, defaults filled in.

    Unknown dimensions are an error (a typo would otherwise silently change which scenarios apply);
    enum values must be one of the profile's; boolean dimensions take true/false.
    """
    dimensions = {d.identifier: d for d in profile.agent_configuration}
    problems: list[str] = []
    checked: dict[str, ConditionValue] = {}
    for key in sorted(reported):
        value = reported[key]
        dimension = dimensions.get(key)
        if dimension is None:
            problems.append(
                f"configuration.{key}: not a dimension of the profile (known: {sorted(dimensions)})"
            )
            continue
        if dimension.type == "boolean":
            if not isinstance(value, bool):
                problems.append(f"configuration.{key}: must be true or false, got {value!r}")
                continue
        elif str(value) not in dimension.values:
            problems.append(f"configuration.{key}: must be one of {dimension.values}, got {value!r}")
            continue
        checked[key] = value
    if problems:
        raise ConfigurationError("; ".join(problems))
    return effective_configuration(profile, checked)
