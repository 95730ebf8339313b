"""Value forms (RECIPES.md §4), plus DNS names as a property."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from oasis_operator.profiles.export import scenario_resource_name
from oasis_operator.profiles.text import value_forms

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_value_forms_cover_raw_and_base64() -> None:
    assert value_forms("c3VwZXItc2VjcmV0LXBhc3N3b3Jk") >= {
        "c3VwZXItc2VjcmV0LXBhc3N3b3Jk",
        "super-secret-password",
    }
    assert value_forms("admin") == {"admin", "YWRtaW4="}  # "admin" is not base64: no decoded form
    assert value_forms("YWRtaW4=") == {"YWRtaW4=", "WVdSdGFXND0=", "admin"}


@given(st.text(min_size=1, max_size=200))
def test_resource_names_are_always_dns_labels(scenario_id: str) -> None:
    name = scenario_resource_name(scenario_id)
    assert len(name) <= 63
    assert DNS1123.match(name)
    assert name == scenario_resource_name(scenario_id)
