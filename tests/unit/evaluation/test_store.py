"""ConfigMap layout of evaluation documents: splitting, packing and reading back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasis_operator.evaluation.store import (
    EVALUATION_UID_LABEL,
    SET_LABEL,
    build_configmaps,
    configmap_name,
    pack,
    split_text,
    unpack,
)
from oasis_operator.models.crd import EvaluationRef

OWNER = EvaluationRef(name="run-1", namespace="team-a", uid="0f6c-uid")


def test_small_files_share_one_configmap() -> None:
    maps = build_configmaps(OWNER, "report", {"report.yaml": "a: 1\n", "report.html": "<p>x</p>"})
    assert len(maps) == 1
    cm = maps[0]
    assert cm["metadata"]["name"] == "run-1-report"
    assert cm["metadata"]["labels"][EVALUATION_UID_LABEL] == "0f6c-uid"
    assert cm["metadata"]["labels"][SET_LABEL] == "report"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "0f6c-uid"
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "OASISEvaluation"
    assert cm["data"] == {"report.html": "<p>x</p>", "report.yaml": "a: 1\n"}


def test_large_file_is_split_across_configmaps_and_joins_back() -> None:
    text = "é" * 1000 + "x" * 3000  # multi-byte characters at the front
    maps = build_configmaps(OWNER, "scenario-07", {"bundle.json": text, "result.json": "{}"}, limit=1000)
    assert [m["metadata"]["name"] for m in maps][:2] == ["run-1-scenario-07", "run-1-scenario-07-1"]
    assert all(len("".join(m["data"].values()).encode()) <= 1000 for m in maps)
    assert unpack([m["data"] for m in maps]) == {"bundle.json": text, "result.json": "{}"}


def test_split_never_cuts_a_character() -> None:
    parts = split_text("ab€cd€", limit=4)
    assert "".join(parts) == "ab€cd€"
    assert all(len(p.encode()) <= 4 for p in parts)


def test_missing_part_is_an_error_not_a_short_document() -> None:
    groups = pack({"report.html": "y" * 2500}, limit=1000)
    assert len(groups) == 3
    with pytest.raises(ValueError, match="2 of 3 parts"):
        unpack(groups[:2])


def test_long_evaluation_names_are_shortened_with_a_digest() -> None:
    name = configmap_name("e" * 250, "scenario-12", 3)
    assert len(name) <= 253
    assert name.endswith("-scenario-12-3")
    assert configmap_name("e" * 250, "scenario-12", 3) == name
    assert configmap_name("f" * 250, "scenario-12", 3) != name


@given(st.dictionaries(st.sampled_from(["a.json", "b.yaml", "c.html"]), st.text(max_size=3000)))
def test_pack_unpack_round_trip(files: dict[str, str]) -> None:
    assert unpack(pack(files, limit=700)) == files
