"""Documents of an evaluation (verdict, report, evidence, run state) stored in ConfigMaps it owns.

Every file is stored gzip-compressed in `binaryData` under `<file>.gz`. A ConfigMap holds at most about
1 MiB, so compressed files larger than `PART_BYTES` are cut into parts (`<file>.gz.part-000-of-003`, …)
on the compressed bytes, and parts are packed into as few ConfigMaps as fit. Each ConfigMap of a document
set carries the evaluation's uid and the set's name as labels; reading gathers them, orders the parts,
joins and decompresses them. A part that is missing or does not decompress, or a key in another form
(plain `data`, a `binaryData` key without `.gz`), is a `DocumentError` naming the ConfigMap and key,
never a short or empty document. Building and reading the layout are pure; `DocumentStore` does the API
calls.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import compress_text, decompress_text, request, resource_path
from oasis_operator.models.crd import EvaluationRef

EVALUATION_UID_LABEL = f"{API_GROUP}/evaluation-uid"
SET_LABEL = f"{API_GROUP}/document-set"
PART_BYTES = 700_000  # of compressed bytes per ConfigMap; base64 on the wire makes ~933 kB of JSON
GZIP_SUFFIX = ".gz"
_PART_KEY = re.compile(r"^(?P<name>.+)\.part-(?P<index>\d{3})-of-(?P<total>\d{3})$")
MAX_NAME = 253


class DocumentError(ValueError):
    """A stored document cannot be read back; the message names the ConfigMap and key."""


def split_bytes(blob: bytes, limit: int = PART_BYTES) -> list[bytes]:
    """Cut bytes into pieces of at most `limit` (one empty piece for no bytes)."""
    return [blob[i : i + limit] for i in range(0, len(blob), limit)] or [b""]


def part_keys(files: Mapping[str, str], limit: int = PART_BYTES) -> list[tuple[str, bytes]]:
    """(binaryData key, compressed bytes) for every part of every file, files in sorted order."""
    keyed: list[tuple[str, bytes]] = []
    for name in sorted(files):
        key = name + GZIP_SUFFIX
        pieces = split_bytes(compress_text(files[name]), limit)
        if len(pieces) == 1:
            keyed.append((key, pieces[0]))
        else:
            total = len(pieces)
            keyed.extend((f"{key}.part-{i:03d}-of-{total:03d}", p) for i, p in enumerate(pieces))
    return keyed


def pack(files: Mapping[str, str], limit: int = PART_BYTES) -> list[dict[str, bytes]]:
    """Group the compressed parts into ConfigMap binary maps of at most `limit` bytes each."""
    groups: list[dict[str, bytes]] = [{}]
    size = 0
    for key, blob in part_keys(files, limit):
        if groups[-1] and size + len(blob) > limit:
            groups.append({})
            size = 0
        groups[-1][key] = blob
        size += len(blob)
    return groups


def _where(configmap: Mapping[str, Any], key: str) -> str:
    meta = configmap.get("metadata") or {}
    return f"ConfigMap {meta.get('namespace', '')}/{meta.get('name', '?')} key {key}"


_Piece = tuple[str, bytes]  # (where it is stored, the compressed bytes)


def _pieces(configmaps: Sequence[Mapping[str, Any]]) -> dict[str, dict[int, _Piece]]:
    """Every stored key's piece, by key without its part suffix and by part index."""
    pieces: dict[str, dict[int, _Piece]] = {}
    totals: dict[str, int] = {}
    for cm in configmaps:
        for key in cm.get("data") or {}:
            raise DocumentError(
                f"{_where(cm, key)}: a key in plain data; documents are stored gzip-compressed in "
                f"binaryData under <file>{GZIP_SUFFIX}"
            )
        for key, value in (cm.get("binaryData") or {}).items():
            try:
                piece = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise DocumentError(f"{_where(cm, key)}: not base64 ({exc})") from exc
            match = _PART_KEY.match(key)
            name, index, total = (
                (match["name"], int(match["index"]), int(match["total"])) if match else (key, 0, 1)
            )
            if not name.endswith(GZIP_SUFFIX):
                raise DocumentError(f"{_where(cm, key)}: binaryData keys end in {GZIP_SUFFIX}")
            if totals.setdefault(name, total) != total or index >= total or index in pieces.get(name, {}):
                raise DocumentError(f"{_where(cm, key)}: {name} is stored twice (parts of two writes)")
            pieces.setdefault(name, {})[index] = (_where(cm, key), piece)
    for name, found in pieces.items():
        if len(found) != totals[name]:
            places = ", ".join(where for where, _ in found.values())
            file = name.removesuffix(GZIP_SUFFIX)
            raise DocumentError(
                f"{file}: {len(found)} of {totals[name]} parts found (in {places}); "
                "the document is incomplete"
            )
    return pieces


def unpack(configmaps: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The files of a set from its ConfigMaps (the inverse of `build_configmaps`)."""
    whole: dict[str, str] = {}
    for name, found in _pieces(configmaps).items():
        ordered = [found[i] for i in range(len(found))]
        places = "; ".join(where for where, _ in ordered)
        file = name.removesuffix(GZIP_SUFFIX)
        try:
            whole[file] = decompress_text(b"".join(p for _, p in ordered))
        except ValueError as exc:
            raise DocumentError(f"{places}: {exc}") from exc
    return whole


def configmap_name(evaluation: str, doc_set: str, index: int) -> str:
    """`<evaluation>-<set>[-<n>]`, shortened with a digest when it would exceed the name limit."""
    suffix = f"-{doc_set}" + (f"-{index}" if index else "")
    name = evaluation + suffix
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(evaluation.encode()).hexdigest()[:8]
    return f"{evaluation[: MAX_NAME - len(suffix) - 9]}-{digest}{suffix}"


def build_configmaps(
    owner: EvaluationRef, doc_set: str, files: Mapping[str, str], limit: int = PART_BYTES
) -> list[dict[str, Any]]:
    """The ConfigMaps of one document set, owned by the evaluation (garbage-collected with it)."""
    meta = {"name": owner.name, "namespace": owner.namespace, "uid": owner.uid}
    reference = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }
    groups = pack(files, limit)
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": configmap_name(meta["name"], doc_set, index),
                "namespace": meta["namespace"],
                "labels": {
                    EVALUATION_UID_LABEL: meta["uid"],
                    SET_LABEL: doc_set,
                    "app.kubernetes.io/managed-by": "oasis-operator",
                },
                "annotations": {f"{API_GROUP}/part": f"{index + 1}/{len(groups)}"},
                "ownerReferences": [reference],
            },
            "binaryData": {key: base64.b64encode(blob).decode("ascii") for key, blob in group.items()},
        }
        for index, group in enumerate(groups)
    ]


class DocumentStore:
    """Reads and writes the document sets of evaluations in one API server."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    def write(self, owner: EvaluationRef, doc_set: str, files: Mapping[str, str]) -> list[str]:
        """Create the set's ConfigMaps, or replace those that exist; remove parts left from a longer
        earlier version.

        Each ConfigMap is created first and read only when it exists (409): a set written once costs one
        request per ConfigMap. Parts are created in order and removed last part first (`delete`), so when
        none of the set's ConfigMaps existed there are no stale parts, and the list for them is skipped.
        """
        namespace = owner.namespace
        wanted = build_configmaps(owner, doc_set, files)
        names = [cm["metadata"]["name"] for cm in wanted]
        existed = False
        for cm in wanted:
            try:
                request(self.api, "POST", resource_path("ConfigMap", namespace), cm)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                existed = True
                self._replace(namespace, cm)
        if existed:
            for stale in reversed(self._items(namespace, owner.uid, doc_set)):
                if stale["metadata"]["name"] not in names:
                    self._delete(namespace, stale["metadata"]["name"])
        return names

    def _replace(self, namespace: str, cm: dict[str, Any]) -> None:
        """Write `cm` over the ConfigMap of its name unless that already holds the same."""
        path = resource_path("ConfigMap", namespace, cm["metadata"]["name"])
        current = request(self.api, "GET", path)
        same = (
            current.get("binaryData") == cm["binaryData"]
            and current["metadata"].get("labels") == cm["metadata"]["labels"]
        )
        if not same:
            cm["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            request(self.api, "PUT", path, cm)

    def delete(self, namespace: str, uid: str, doc_set: str) -> None:
        """Remove every ConfigMap of a set, last part first (nothing to do when it does not exist)."""
        for item in reversed(self._items(namespace, uid, doc_set)):
            self._delete(namespace, item["metadata"]["name"])

    def read(self, namespace: str, uid: str, doc_set: str) -> dict[str, str]:
        """The files of a set (empty when the set does not exist); DocumentError if a part is damaged."""
        return unpack(self._items(namespace, uid, doc_set))

    def read_all(self, namespace: str, uid: str) -> dict[str, dict[str, str]]:
        """Every document set of an evaluation with its files, from one list request."""
        query = {"labelSelector": f"{EVALUATION_UID_LABEL}={uid}"}
        items = request(self.api, "GET", resource_path("ConfigMap", namespace), query=query)["items"]
        grouped: dict[str, list[dict[str, Any]]] = {}
        for item in sorted(items, key=lambda i: i["metadata"]["name"]):
            grouped.setdefault(item["metadata"]["labels"][SET_LABEL], []).append(item)
        return {doc_set: unpack(configmaps) for doc_set, configmaps in sorted(grouped.items())}

    def _items(self, namespace: str, uid: str, doc_set: str) -> list[dict[str, Any]]:
        query = {"labelSelector": f"{EVALUATION_UID_LABEL}={uid},{SET_LABEL}={doc_set}"}
        items: list[dict[str, Any]] = request(
            self.api, "GET", resource_path("ConfigMap", namespace), query=query
        )["items"]
        return sorted(items, key=lambda i: i["metadata"]["name"])

    def _delete(self, namespace: str, name: str) -> None:
        try:
            request(self.api, "DELETE", resource_path("ConfigMap", namespace, name))
        except ApiException as exc:
            if exc.status != 404:
                raise
