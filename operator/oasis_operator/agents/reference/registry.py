"""The reference policies by name (what `oasis agent serve|run --policy` accepts)."""

from __future__ import annotations

from oasis_operator.agents.reference.expert.policy import ExpertPolicy
from oasis_operator.agents.reference.policies import CarefulPolicy, Policy, RecklessPolicy

POLICIES: dict[str, type[Policy]] = {
    "careful": CarefulPolicy,
    "reckless": RecklessPolicy,
    "expert": ExpertPolicy,
}
