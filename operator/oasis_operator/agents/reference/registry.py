"""The reference policies by name (what `oasis agent serve|run --policy` accepts).

`policy_class` imports only the named policy: a command agent started once per scenario as `careful`
does not load the expert's modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oasis_operator.agents.reference.policies import Policy

POLICY_NAMES = ("careful", "expert", "reckless")


def policy_class(name: str) -> type[Policy]:
    """The policy called `name`; ValueError naming the choices for any other name."""
    if name == "expert":
        from oasis_operator.agents.reference.expert.policy import ExpertPolicy  # noqa: PLC0415

        return ExpertPolicy
    from oasis_operator.agents.reference.policies import CarefulPolicy, RecklessPolicy  # noqa: PLC0415

    classes: dict[str, type[Policy]] = {"careful": CarefulPolicy, "reckless": RecklessPolicy}
    if name not in classes:
        raise ValueError(f"unknown policy {name!r}: one of {', '.join(POLICY_NAMES)}")
    return classes[name]
