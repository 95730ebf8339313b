"""Documents of an evaluation (verdict, report, evidence, run state) stored in ConfigMaps it owns.

A ConfigMap holds at most about 1 MiB, so every file is cut into parts of at most `PART_BYTES` (on UTF-8
character boundaries) and parts are packed into as few ConfigMaps as fit. Each ConfigMap of a document set
carries the evaluation's uid and the set's name as labels; reading gathers them, orders the parts and joins
them. Building and splitting are pure; `DocumentStore` does the API calls.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import EvaluationRef

EVALUATION_UID_LABEL = f"{API_GROUP}/evaluation-uid"
SET_LABEL = f"{API_GROUP}/document-set"
PART_BYTES = 700_000
_PART_KEY = re.compile(r"^(?P<name>.+)\.part-(?P<index>\d{3})-of-(?P<total>\d{3})$")
MAX_NAME = 253


def split_text(text: str, limit: int = PART_BYTES) -> list[str]:
    """Cut text into pieces of at most `limit` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    parts: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1  # back off to the first byte of a character
        parts.append(data[start:end].decode("utf-8"))
        start = end
    return parts or [""]


def part_keys(files: Mapping[str, str], limit: int = PART_BYTES) -> list[tuple[str, str]]:
    """(data key, text) for every part of every file, files in sorted order."""
    keyed: list[tuple[str, str]] = []
    for name in sorted(files):
        pieces = split_text(files[name], limit)
        if len(pieces) == 1:
            keyed.append((name, pieces[0]))
        else:
            total = len(pieces)
            keyed.extend((f"{name}.part-{i:03d}-of-{total:03d}", p) for i, p in enumerate(pieces))
    return keyed


def pack(files: Mapping[str, str], limit: int = PART_BYTES) -> list[dict[str, str]]:
    """Group the parts into ConfigMap data maps of at most `limit` bytes each."""
    groups: list[dict[str, str]] = [{}]
    size = 0
    for key, text in part_keys(files, limit):
        length = len(text.encode("utf-8"))
        if groups[-1] and size + length > limit:
            groups.append({})
            size = 0
        groups[-1][key] = text
        size += length
    return groups


def unpack(datas: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """Join the parts of every file found in the data maps (the inverse of `pack`)."""
    whole: dict[str, str] = {}
    parts: dict[str, dict[int, str]] = {}
    totals: dict[str, int] = {}
    for data in datas:
        for key, text in data.items():
            match = _PART_KEY.match(key)
            if match is None:
                whole[key] = text
                continue
            parts.setdefault(match["name"], {})[int(match["index"])] = text
            totals[match["name"]] = int(match["total"])
    for name, pieces in parts.items():
        if len(pieces) != totals[name]:
            raise ValueError(
                f"{name}: {len(pieces)} of {totals[name]} parts found; the document is incomplete"
            )
        whole[name] = "".join(pieces[i] for i in range(totals[name]))
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
            "data": data,
        }
        for index, data in enumerate(groups)
    ]


class DocumentStore:
    """Reads and writes the document sets of evaluations in one API server."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    def write(self, owner: EvaluationRef, doc_set: str, files: Mapping[str, str]) -> list[str]:
        """Create or replace the set's ConfigMaps; remove parts left from a longer earlier version."""
        namespace = owner.namespace
        wanted = build_configmaps(owner, doc_set, files)
        names = [cm["metadata"]["name"] for cm in wanted]
        for cm in wanted:
            path = resource_path("ConfigMap", namespace, cm["metadata"]["name"])
            try:
                current = request(self.api, "GET", path)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                request(self.api, "POST", resource_path("ConfigMap", namespace), cm)
                continue
            if (
                current.get("data") != cm["data"]
                or current["metadata"].get("labels") != cm["metadata"]["labels"]
            ):
                cm["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                request(self.api, "PUT", path, cm)
        for stale in self._items(namespace, owner.uid, doc_set):
            if stale["metadata"]["name"] not in names:
                self._delete(namespace, stale["metadata"]["name"])
        return names

    def delete(self, namespace: str, uid: str, doc_set: str) -> None:
        """Remove every ConfigMap of a set (nothing to do when it does not exist)."""
        for item in self._items(namespace, uid, doc_set):
            self._delete(namespace, item["metadata"]["name"])

    def read(self, namespace: str, uid: str, doc_set: str) -> dict[str, str]:
        """The files of a set (empty when the set does not exist)."""
        items = self._items(namespace, uid, doc_set)
        return unpack([i.get("data") or {} for i in items])

    def read_all(self, namespace: str, uid: str) -> dict[str, dict[str, str]]:
        """Every document set of an evaluation with its files, from one list request."""
        query = {"labelSelector": f"{EVALUATION_UID_LABEL}={uid}"}
        items = request(self.api, "GET", resource_path("ConfigMap", namespace), query=query)["items"]
        grouped: dict[str, list[dict[str, str]]] = {}
        for item in sorted(items, key=lambda i: i["metadata"]["name"]):
            grouped.setdefault(item["metadata"]["labels"][SET_LABEL], []).append(item.get("data") or {})
        return {doc_set: unpack(datas) for doc_set, datas in sorted(grouped.items())}

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
