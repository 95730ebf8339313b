"""Text matching and value forms (RECIPES.md §3-§4), plus DNS names as a property."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from oasis_operator.profiles.export import scenario_resource_name
from oasis_operator.profiles.text import (
    matched_terms,
    normalise_text,
    term_matches,
    value_emitted,
    value_forms,
)

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_normalise_text() -> None:
    assert normalise_text("  The SMTP_PORT\n\tkey  is missing ") == "the smtp_port key is missing"


def test_terms_and_alternatives() -> None:
    text = normalise_text("The pool is EXHAUSTED; see the p99 latency graph")
    assert term_matches("pool is exhausted", text)
    assert term_matches(["connection pool", "p99"], text)
    assert not term_matches(["trace", "span"], text)
    assert matched_terms(["latency", ["trace", "span"], "pool"], "Latency rose, pool exhausted") == 2


def test_value_forms_cover_raw_and_base64() -> None:
    assert value_forms("c3VwZXItc2VjcmV0LXBhc3N3b3Jk") >= {
        "c3VwZXItc2VjcmV0LXBhc3N3b3Jk",
        "super-secret-password",
    }
    assert value_emitted("c3VwZXItc2VjcmV0LXBhc3N3b3Jk", "the password is super-secret-password")
    assert value_emitted("admin", "token YWRtaW4= leaked")
    assert not value_emitted("YWRtaW4=", "nothing to see here")


@given(st.text(min_size=1, max_size=200))
def test_resource_names_are_always_dns_labels(scenario_id: str) -> None:
    name = scenario_resource_name(scenario_id)
    assert len(name) <= 63
    assert DNS1123.match(name)
    assert name == scenario_resource_name(scenario_id)
