"""Preflight: the provider's declaration against the SI profile's conformance contract."""

from __future__ import annotations

import pytest

from oasis_operator.environments.conformance import (
    Declared,
    base_declaration,
    checked_server,
    conformance_summary,
    find_gaps,
    satisfies,
)
from oasis_operator.environments.preflight import server_version
from oasis_operator.profiles import default_profile_path, load_profile


@pytest.fixture(scope="module")
def contract():  # type: ignore[no-untyped-def]
    loaded = load_profile(default_profile_path()).conformance
    assert loaded is not None
    return loaded


def test_our_declaration_meets_the_contract_at_tier_1(contract) -> None:  # type: ignore[no-untyped-def]
    declared = base_declaration()
    assert find_gaps(contract, declared, requested_tier=1) == []
    assert set(declared) == set(contract.requirements)
    assert conformance_summary(declared, []).startswith("passed: 8 requirements")


def test_tier_2_is_a_gap_naming_the_key_and_the_reason(contract) -> None:  # type: ignore[no-untyped-def]
    gaps = find_gaps(contract, base_declaration(), requested_tier=2)
    assert [g.key for g in gaps] == ["complexity_tier_supported"]
    assert gaps[0].expected == "gte 2"
    assert gaps[0].declared == "1"
    assert "one cluster" in gaps[0].reason


def test_every_withdrawn_claim_is_a_gap(contract) -> None:  # type: ignore[no-untyped-def]
    declared = base_declaration()
    declared["state_injection"] = Declared(value=False, reason="probe Deployment got a ReplicaSet")
    declared["evidence_sources_available"] = Declared(value=["resource_state"], reason="gateway down")
    declared["oasis_core_spec_version"] = Declared(value=["1.0.0-rc1.4"], reason="old")
    gaps = {g.key: g for g in find_gaps(contract, declared, requested_tier=1)}
    assert set(gaps) == {"state_injection", "evidence_sources_available", "oasis_core_spec_version"}
    assert "missing ['audit_log', 'value_containment']" in gaps["evidence_sources_available"].expected
    assert "ReplicaSet" in gaps["state_injection"].describe()


def test_missing_required_key_is_a_gap(contract) -> None:  # type: ignore[no-untyped-def]
    declared = base_declaration()
    del declared["network_policy_enforcement"]
    assert [g.key for g in find_gaps(contract, declared, 1)] == ["network_policy_enforcement"]


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("1.0.0-rc1.5", ">=1.0.0-rc1.5", True),
        ("1.0.0-rc1.10", ">=1.0.0-rc1.5", True),
        ("1.0.0-rc1.4", ">=1.0.0-rc1.5", False),
        ("1.0.0", ">=1.0.0-rc1.5", True),
        ("1.0.0-rc2", ">=1.0.0-rc1.5", True),
        ("0.9.0", ">=1.0.0-rc1.5", False),
        ("1.2.0", ">=1.0.0, <2.0.0", True),
        ("2.0.0", ">=1.0.0, <2.0.0", False),
    ],
)
def test_semver_constraints(version: str, constraint: str, expected: bool) -> None:
    assert satisfies(version, constraint) is expected


def test_summary_names_the_server_the_self_check_ran_on(contract) -> None:  # type: ignore[no-untyped-def]
    declared = base_declaration()
    version = {"gitVersion": "v1.37.2", "platform": "linux/amd64", "major": "1", "minor": "37"}
    declared["environment_type"] = Declared(value="kubernetes-cluster", reason=server_version(version))
    assert conformance_summary(declared, []) == (
        "passed on kube-apiserver v1.37.2 (linux/amd64): 8 requirements declared and met"
    )
    gaps = find_gaps(contract, declared, requested_tier=2)
    assert conformance_summary(declared, gaps).startswith(
        "failed on kube-apiserver v1.37.2 (linux/amd64): complexity_tier_supported: requires gte 2"
    )
    assert server_version({}) == "a kube-apiserver that did not say its version"
    assert (
        checked_server(declared) == "kube-apiserver v1.37.2 (linux/amd64)"
    )  # what status.sandboxServer says
    assert checked_server(base_declaration()) is None  # declared only: no live check ran
    unknown = {"environment_type": Declared(value="kubernetes-cluster", reason=server_version({}))}
    assert checked_server(unknown) is None
