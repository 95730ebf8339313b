"""docs/declared-state.md names every kind a scenario may declare and every field each kind takes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oasis_operator.models.declared_state import KINDS
from oasis_operator.models.declared_workloads import PodTemplateState, Toleration, VolumeClaimTemplate
from oasis_operator.sandbox.faults import RULES, Cause
from oasis_operator.sandbox.kwok import fault_names

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


def _fault_rows() -> dict[str, list[str]]:
    text = _text().split("## Faults", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    table = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return {cells[0].strip("` "): cells for cells in table}


@pytest.mark.parametrize("cause", list(Cause))
def test_every_fault_cause_is_documented_with_its_stage_symptom_and_cure(cause: Cause) -> None:
    row = _fault_rows().get(cause.value)
    assert row is not None, f"docs/declared-state.md has no fault row for {cause.value}"
    rule = RULES[cause]
    _, _, stage, shows, cure = row
    assert stage.startswith(f"`{rule.stage}`" if rule.stage else "none"), (cause, stage)
    assert shows == f"`{rule.symptom}`", (cause, shows)
    assert cure == rule.cure, (cause, cure)


def test_every_documented_fault_stage_is_a_template_in_the_stage_data() -> None:
    templates = set(fault_names())
    documented = {r[2].strip("`") for r in _fault_rows().values() if r[2].startswith("`")}
    assert documented <= templates, documented - templates
