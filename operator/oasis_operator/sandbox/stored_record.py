"""The ConfigMap that keeps a sandbox's record (pure): gzip JSON in `binaryData`.

The record (environment, declared resources, before-snapshot) is ~35 kB of JSON and is read back only
after an operator restart, so it is stored compressed (`record.json.gz`, ~4 kB). Records written before
compression (`record.json` in `data`) are still read.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from oasis_operator.kube import compress_text, decompress_text

RECORD_CONFIGMAP = "environment"  # the record ConfigMap of environment <id> is `environment-<id>`
RECORD_KEY = "record.json"
COMPRESSED_KEY = RECORD_KEY + ".gz"


class RecordError(ValueError):
    """The stored record cannot be read; the message names the ConfigMap and key."""


def record_name(env_id: str) -> str:
    """The name of environment `env_id`'s record ConfigMap in the control namespace."""
    return f"{RECORD_CONFIGMAP}-{env_id}"


def record_configmap(
    namespace: str,
    env_id: str,
    labels: Mapping[str, str],
    record_json: str,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The record ConfigMap's body."""
    blob = base64.b64encode(compress_text(record_json)).decode("ascii")
    meta: dict[str, Any] = {"name": record_name(env_id), "namespace": namespace, "labels": dict(labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"metadata": meta, "binaryData": {COMPRESSED_KEY: blob}}


def record_text(configmap: Mapping[str, Any]) -> str:
    """The record's JSON from its ConfigMap (gzip JSON under `binaryData`)."""
    meta = configmap.get("metadata") or {}
    where = f"ConfigMap {meta.get('namespace', '')}/{meta.get('name', RECORD_CONFIGMAP)}"
    compressed = (configmap.get("binaryData") or {}).get(COMPRESSED_KEY)
    if compressed is None:
        raise RecordError(f"{where}: no {COMPRESSED_KEY} in binaryData (the sandbox's record is missing)")
    try:
        return decompress_text(base64.b64decode(compressed, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise RecordError(f"{where} key {COMPRESSED_KEY}: {exc}") from exc
