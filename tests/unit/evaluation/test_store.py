"""ConfigMap layout of evaluation documents: compressing, splitting, packing and reading back."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasis_operator.evaluation.store import (
    EVALUATION_UID_LABEL,
    PART_BYTES,
    SET_LABEL,
    DocumentError,
    build_configmaps,
    configmap_name,
    pack,
    split_bytes,
    unpack,
)
from oasis_operator.models.crd import EvaluationRef

OWNER = EvaluationRef(name="run-1", namespace="team-a", uid="0f6c-uid")


def _gunzip(value: str) -> str:
    return gzip.decompress(base64.b64decode(value)).decode()


def _incompressible(size: int, seed: bytes = b"7") -> str:
    """Text whose gzip is a little over `size` bytes: base64 of `size` pseudo-random bytes."""
    return base64.b64encode(hashlib.shake_256(seed).digest(size)).decode()


def test_small_files_share_one_configmap() -> None:
    maps = build_configmaps(OWNER, "report", {"report.yaml": "a: 1\n", "report.html": "<p>x</p>"})
    assert len(maps) == 1
    cm = maps[0]
    assert cm["metadata"]["name"] == "run-1-report"
    assert cm["metadata"]["labels"][EVALUATION_UID_LABEL] == "0f6c-uid"
    assert cm["metadata"]["labels"][SET_LABEL] == "report"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "0f6c-uid"
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "OASISEvaluation"
    # Stored compressed, under keys that say so; nothing in plain `data`.
    assert "data" not in cm
    assert sorted(cm["binaryData"]) == ["report.html.gz", "report.yaml.gz"]
    assert {k: _gunzip(v) for k, v in cm["binaryData"].items()} == {
        "report.html.gz": "<p>x</p>",
        "report.yaml.gz": "a: 1\n",
    }


def test_equal_files_give_equal_configmaps() -> None:
    # No timestamp in the gzip header: a rewrite of the same documents is seen as unchanged.
    files = {"verdict.json": json.dumps({"safety": "PASS"})}
    assert build_configmaps(OWNER, "verdict", files) == build_configmaps(OWNER, "verdict", files)


def test_large_file_is_split_across_configmaps_and_joins_back() -> None:
    text = "é" * 1000 + _incompressible(3000)  # multi-byte characters at the front
    maps = build_configmaps(OWNER, "scenario-07", {"bundle.json": text, "result.json": "{}"}, limit=1000)
    assert [m["metadata"]["name"] for m in maps][:2] == ["run-1-scenario-07", "run-1-scenario-07-1"]
    assert all(sum(len(base64.b64decode(v)) for v in m["binaryData"].values()) <= 1000 for m in maps)
    assert "bundle.json.gz.part-000-of-004" in maps[0]["binaryData"]
    assert unpack(maps) == {"bundle.json": text, "result.json": "{}"}


def test_split_cuts_compressed_bytes_and_joins_them_exactly() -> None:
    # Parts are cut on the compressed bytes, so a cut may fall inside a character of the text.
    blob = gzip.compress("ab€cd€".encode())
    parts = split_bytes(blob, limit=4)
    assert b"".join(parts) == blob
    assert all(len(p) <= 4 for p in parts)
    assert split_bytes(b"", limit=4) == [b""]
    files = {"x.txt": "ab€cd€" * 50}
    assert unpack(build_configmaps(OWNER, "s", files, limit=8)) == files


def test_documents_bigger_than_the_plain_limit_fit_one_configmap() -> None:
    # A bundle-like JSON of ~3 MB: three ConfigMaps were it plain text, one compressed part.
    rows = [
        {"verb": "get", "path": f"/api/v1/namespaces/shop/pods/web-{i}", "code": 200} for i in range(40_000)
    ]
    text = json.dumps({"entries": rows})
    assert len(text.encode()) > 3 * 1_000_000
    (cm,) = build_configmaps(OWNER, "scenario-00", {"bundle.json": text})
    assert list(cm["binaryData"]) == ["bundle.json.gz"]
    assert len(base64.b64decode(cm["binaryData"]["bundle.json.gz"])) <= PART_BYTES
    assert unpack([cm]) == {"bundle.json": text}


def test_every_configmap_stays_under_the_api_limit() -> None:
    # 1 MiB is the API server's limit on a ConfigMap's data; base64 on the wire stays under its body cap.
    maps = build_configmaps(OWNER, "scenario-01", {"bundle.json": _incompressible(2_500_000)})
    assert len(maps) == 4
    for cm in maps:
        assert sum(len(base64.b64decode(v)) for v in cm["binaryData"].values()) <= PART_BYTES < 1024 * 1024


def test_missing_part_is_an_error_not_a_short_document() -> None:
    groups = pack({"report.html": _incompressible(2500)}, limit=1000)
    assert len(groups) == 3
    maps = build_configmaps(OWNER, "report", {"report.html": _incompressible(2500)}, limit=1000)
    with pytest.raises(DocumentError, match=r"report.html: 2 of 3 parts found .*team-a/run-1-report-1"):
        unpack(maps[:2])


def test_damaged_part_names_the_configmap_and_key() -> None:
    (cm,) = build_configmaps(OWNER, "verdict", {"verdict.yaml": "safety: PASS\n" * 100})
    blob = base64.b64decode(cm["binaryData"]["verdict.yaml.gz"])
    cut = {**cm, "binaryData": {"verdict.yaml.gz": base64.b64encode(blob[: len(blob) // 2]).decode()}}
    with pytest.raises(DocumentError, match=r"ConfigMap team-a/run-1-verdict key verdict.yaml.gz: not gzip"):
        unpack([cut])
    garbage = {**cm, "binaryData": {"verdict.yaml.gz": base64.b64encode(b"plain text").decode()}}
    with pytest.raises(DocumentError, match=r"run-1-verdict key verdict\.yaml\.gz"):
        unpack([garbage])
    not_utf8 = base64.b64encode(gzip.compress(b"\xff\xfe")).decode()
    with pytest.raises(DocumentError, match="not UTF-8"):
        unpack([{**cm, "binaryData": {"verdict.yaml.gz": not_utf8}}])


def test_keys_that_do_not_say_their_form_are_refused() -> None:
    (cm,) = build_configmaps(OWNER, "verdict", {"verdict.yaml": "safety: PASS\n"})
    renamed = {**cm, "binaryData": {"verdict.yaml": cm["binaryData"]["verdict.yaml.gz"]}}
    with pytest.raises(DocumentError, match=r"run-1-verdict key verdict.yaml: binaryData keys end in .gz"):
        unpack([renamed])
    plain = {**cm, "data": {"verdict.yaml": "safety: FAIL\n"}}
    with pytest.raises(DocumentError, match=r"run-1-verdict key verdict\.yaml: a key in plain data"):
        unpack([plain])


def test_parts_of_two_writes_are_refused() -> None:
    first = build_configmaps(OWNER, "s", {"b.json": _incompressible(2500)}, limit=1000)
    second = build_configmaps(OWNER, "s", {"b.json": _incompressible(1500, seed=b"8")}, limit=1000)
    with pytest.raises(DocumentError, match="stored twice"):
        unpack([second[0], first[1], first[2]])


def test_long_evaluation_names_are_shortened_with_a_digest() -> None:
    name = configmap_name("e" * 250, "scenario-12", 3)
    assert len(name) <= 253
    assert name.endswith("-scenario-12-3")
    assert configmap_name("e" * 250, "scenario-12", 3) == name
    assert configmap_name("f" * 250, "scenario-12", 3) != name


@given(st.dictionaries(st.sampled_from(["a.json", "b.yaml", "c.html"]), st.text(max_size=3000)))
def test_pack_unpack_round_trip(files: dict[str, str]) -> None:
    assert unpack(build_configmaps(OWNER, "s", files, limit=700)) == files
    assert all(sum(len(b) for b in group.values()) <= 700 for group in pack(files, limit=700))
