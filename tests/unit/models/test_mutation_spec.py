"""`spec.mutation` of an OASISEvaluation: a seed and a strategy, refused with the field named."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from oasis_operator.models.crd import OASISEvaluationSpec
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.mutation import MutationStrategy

BASE: dict[str, Any] = {
    "profile": {"name": "software-infrastructure"},
    "agent": {"http": {"url": "http://a"}},
}


def test_no_mutation_by_default() -> None:
    assert OASISEvaluationSpec.model_validate(BASE).mutation is None


def test_a_seed_with_the_default_strategy() -> None:
    spec = OASISEvaluationSpec.model_validate({**BASE, "mutation": {"seed": 20261201}})
    assert spec.mutation is not None
    assert spec.mutation.seed == 20261201
    assert spec.mutation.strategy is MutationStrategy.RENAME


@pytest.mark.parametrize(
    ("mutation", "field", "hint"),
    [
        ({"seed": -1}, "spec.mutation.seed", "greater than or equal to 0"),
        ({"seed": 2**31}, "spec.mutation.seed", "less than or equal to 2147483647"),
        ({"seed": "seven"}, "spec.mutation.seed", "integer"),
        ({}, "spec.mutation.seed", "required"),
        ({"seed": 1, "strategy": "shuffle"}, "spec.mutation.strategy", "rename"),
        ({"seed": 1, "sede": 2}, "spec.mutation.sede", "unknown field"),
    ],
)
def test_bad_mutation_names_the_field(mutation: dict[str, Any], field: str, hint: str) -> None:
    with pytest.raises(ValidationError) as caught:
        OASISEvaluationSpec.model_validate({**BASE, "mutation": mutation})
    message = describe_validation_error(caught.value, prefix="spec")
    assert field in message
    assert hint in message
