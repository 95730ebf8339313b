"""Preflight conformance (Execution §3 step 0): what this provider declares, compared with the profile.

The declaration is honest: every value says why it holds, and a capability we do not have is declared
unmet with the reason. `find_gaps` is pure; `preflight.self_check` backs the declaration with live probes.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from oasis_operator.models.profile import ConformanceContract

CORE_SPEC_VERSIONS = ["1.0.0-rc1.5"]
SUPPORTED_TIER = 1
# How the self-check names the server it ran on: `kube-apiserver v1.37.2 (linux/amd64)`.
SERVER_PREFIX = "kube-apiserver "


class Declared(BaseModel):
    """One declared capability: its value and the reason it is what it is."""

    model_config = ConfigDict(frozen=True)

    value: Any
    reason: str


class Gap(BaseModel):
    """A requirement the provider does not meet."""

    model_config = ConfigDict(frozen=True)

    key: str
    expected: str
    declared: str
    reason: str

    def describe(self) -> str:
        return f"{self.key}: requires {self.expected}, provider declares {self.declared} ({self.reason})"


def base_declaration() -> dict[str, Declared]:
    """What this operator's sandbox provider can do, before the live probes confirm or refute it."""
    return {
        "environment_type": Declared(
            value="kubernetes-cluster", reason="sandboxes are namespaces of a real kube-apiserver"
        ),
        "complexity_tier_supported": Declared(
            value=SUPPORTED_TIER,
            reason="the twin is one cluster; tier 2 needs a second cluster or team-owned namespaces, "
            "tracing and a policy engine, tier 3 adversarial variants, none of which is built",
        ),
        "oasis_core_spec_version": Declared(
            value=list(CORE_SPEC_VERSIONS), reason="implemented by the engine"
        ),
        "evidence_sources_available": Declared(
            value=["audit_log", "resource_state", "value_containment", "state_diff"],
            reason="the gateway records every agent request; snapshots before and after each run; the agent "
            "response is searched for contained values",
        ),
        "value_containment_support": Declared(value=True, reason="engine searches raw and base64 forms"),
        "state_injection": Declared(value=True, reason="twin objects and status written through the API"),
        "audit_policy_installation": Declared(
            value=True,
            reason="the gateway is the agent's only door and records method, path, body and response code "
            "of every request; the API server's own audit log is read too where one is configured",
        ),
        "network_policy_enforcement": Declared(
            value=True,
            reason="twin pods have no network at all, so no traffic can cross a zone; the gateway refuses "
            "proxy, exec, attach and port-forward, so the agent has no data path to bypass a policy with",
        ),
    }


def _semver_key(text: str) -> tuple[tuple[int, int, int], int, tuple[tuple[int, int | str], ...]]:
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?", text.strip())
    if not match:
        raise ValueError(f"not a semantic version: {text!r}")
    core = (int(match[1]), int(match[2]), int(match[3]))
    pre = match[4]
    if pre is None:
        return core, 1, ()
    # Identifiers such as `rc1` compare as (letters, number) so rc1.5 < rc1.10 < rc2.
    idents: list[tuple[int, int | str]] = []
    for part in pre.split("."):
        for letters, digits in re.findall(r"([A-Za-z-]*)(\d*)", part):
            if letters:
                idents.append((1, letters))
            if digits:
                idents.append((0, int(digits)))
    return core, 0, tuple(idents)


def satisfies(version: str, constraint: str) -> bool:
    """True if `version` meets a constraint such as `>=1.0.0-rc1.5` (comma-separated clauses all hold)."""
    for clause in (c.strip() for c in constraint.split(",") if c.strip()):
        match = re.fullmatch(r"(>=|<=|==|>|<|=)?\s*(\S+)", clause)
        if not match:
            raise ValueError(f"not a version constraint: {clause!r}")
        op, wanted = match[1] or "==", match[2]
        a, b = _semver_key(version), _semver_key(wanted)
        ok = {
            ">=": a >= b,
            "<=": a <= b,
            ">": a > b,
            "<": a < b,
            "==": a == b,
            "=": a == b,
        }[op]
        if not ok:
            return False
    return True


def _check(key: str, kind: str, expected: Any, declared: Any, requested_tier: int) -> str | None:
    """None when satisfied, else the expectation in words."""
    if kind == "integer" and isinstance(expected, dict):
        wanted = requested_tier if expected.get("value") == "requested" else int(expected.get("value", 0))
        op = expected.get("comparison_operator", "gte")
        ok = isinstance(declared, int) and (declared >= wanted if op == "gte" else declared == wanted)
        return None if ok else f"{op} {wanted}"
    if kind == "semver_list":
        versions = declared if isinstance(declared, list) else []
        return None if any(satisfies(str(v), str(expected)) for v in versions) else f"a version {expected}"
    if kind == "array":
        missing = sorted(set(expected or []) - set(declared if isinstance(declared, list) else []))
        return None if not missing else f"all of {sorted(expected)} (missing {missing})"
    return None if declared == expected else repr(expected)


def find_gaps(
    contract: ConformanceContract, declaration: dict[str, Declared], requested_tier: int
) -> list[Gap]:
    """Every required key the declaration does not satisfy, in the contract's order."""
    gaps: list[Gap] = []
    for key, requirement in contract.requirements.items():
        declared = declaration.get(key)
        if declared is None:
            if requirement.required:
                gaps.append(
                    Gap(key=key, expected="a declared value", declared="nothing", reason="unknown key")
                )
            continue
        wanted = _check(key, requirement.type, requirement.expected, declared.value, requested_tier)
        if wanted is not None and requirement.required:
            gaps.append(Gap(key=key, expected=wanted, declared=repr(declared.value), reason=declared.reason))
    return gaps


def checked_server(declaration: dict[str, Declared]) -> str | None:
    """The API server the live self-check ran on (`kube-apiserver v1.37.2 (linux/amd64)`), if it ran."""
    where = declaration.get("environment_type")
    # The live self-check replaces the declared reason with the server's own version (preflight.py).
    return where.reason if where is not None and where.reason.startswith(SERVER_PREFIX) else None


def conformance_summary(declaration: dict[str, Declared], gaps: list[Gap]) -> str:
    """One line for the verdict's environment metadata, naming the server the self-check ran on."""
    server = checked_server(declaration)
    on = f" on {server}" if server else ""
    if gaps:
        return f"failed{on}: " + "; ".join(g.describe() for g in gaps)
    return f"passed{on}: {len(declaration)} requirements declared and met"
