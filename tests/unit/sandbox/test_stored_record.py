"""The sandbox record's ConfigMap: compressed, read back in both forms, a damaged one named."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from oasis_operator.sandbox.stored_record import RecordError, record_configmap, record_text

RECORD = json.dumps(
    {"environment": {"id": "e1"}, "before": [{"kind": "Pod", "name": f"web-{i}"} for i in range(300)]}
)


def test_record_is_stored_compressed_and_reads_back() -> None:
    cm = record_configmap(
        "sbx-control",
        "e1",
        {"oasis.evaluation.dev/env": "e1"},
        RECORD,
        {"oasis.evaluation.dev/scenario": "s"},
    )
    assert cm["metadata"] == {
        "name": "environment-e1",
        "namespace": "sbx-control",
        "labels": {"oasis.evaluation.dev/env": "e1"},
        "annotations": {"oasis.evaluation.dev/scenario": "s"},
    }
    assert "data" not in cm
    stored = base64.b64decode(cm["binaryData"]["record.json.gz"])
    assert gzip.decompress(stored).decode() == RECORD
    assert len(stored) * 5 < len(RECORD)  # repetitive JSON: far smaller
    assert record_text(cm) == RECORD


def test_damaged_or_missing_record_is_an_error_naming_the_configmap() -> None:
    cm = record_configmap("sbx-control", "e1", {}, RECORD)
    assert "annotations" not in cm["metadata"]
    cm["binaryData"]["record.json.gz"] = base64.b64encode(b"\x1f\x8b cut").decode()
    with pytest.raises(
        RecordError, match=r"ConfigMap sbx-control/environment-e1 key record\.json\.gz: not gzip"
    ):
        record_text(cm)
    plain = {"metadata": {"name": "environment", "namespace": "sbx-e1"}, "data": {"record.json": RECORD}}
    with pytest.raises(RecordError, match=r"sbx-e1/environment: no record\.json\.gz in binaryData"):
        record_text(plain)
