"""docs/declared-state.md names every kind a scenario may declare and every field each kind takes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oasis_operator.models.declared_state import KINDS
from oasis_operator.models.declared_workloads import PodTemplateState, Toleration, VolumeClaimTemplate

DOC = Path(__file__).resolve().parents[2] / "docs" / "declared-state.md"
# Kinds written out under their own heading; the others are rows of a table.
HEADED = ("deployment", "statefulset", "daemonset", "job", "cronjob", "pod", "hpa", "pdb")
SHARED = set(PodTemplateState.model_fields) - {"namespace"}


def _text() -> str:
    return DOC.read_text()


def _section(kind: str) -> str:
    """The kind's own heading's text, or its table row."""
    text = _text()
    if kind in HEADED:
        return text.split(f"### `{kind}`\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith(f"| `{kind}` |")]
    assert len(rows) == 1, kind
    return rows[0]


def _named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_A-Z]+)`", text))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_of_every_kind_is_documented(kind: str) -> None:
    fields = set(KINDS[kind].model_fields) - {"namespace"}
    documented = _named(_section(kind))
    if issubclass(KINDS[kind], PodTemplateState):  # the shared pod vocabulary has its own table
        documented |= SHARED | {"status"}
    if kind == "cronjob":  # "everything a job takes"
        documented |= _named(_section("job")) | _named(_section("daemonset"))
    assert fields - documented == set(), kind


def test_the_shared_pod_vocabulary_and_item_fields_are_documented() -> None:
    workloads = _text().split("## Workloads", 1)[1].split("\n### ", 1)[0]
    assert (SHARED | {"status"}) - _named(workloads) == set()
    assert set(Toleration.model_fields) - _named(_section("daemonset")) == set()
    assert set(VolumeClaimTemplate.model_fields) - _named(_section("statefulset")) == set()
