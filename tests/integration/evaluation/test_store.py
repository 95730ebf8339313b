"""Document sets in ConfigMaps on the real API server: write, rewrite shorter, read one or all, the
requests a write costs, and a damaged part."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.store import (
    EVALUATION_UID_LABEL,
    DocumentError,
    DocumentStore,
    build_configmaps,
)
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import EvaluationRef
from tests.cluster_fixtures import KUBECTLS, Cluster


@pytest.fixture
def owner(namespace: str, custom: CustomObjectsApi) -> dict[str, Any]:
    # A real owner: the garbage collector removes ConfigMaps whose owner does not exist.
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": "run-1"},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": {"http": {"url": "http://127.0.0.1:1"}},
        },
    }
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", body
    )
    return created


class Counted:
    """The (method, path) of every request a client sends to the real API server."""

    def __init__(self, api: ApiClient) -> None:
        self.calls: list[tuple[str, str]] = []
        self._call = api.call_api
        api.call_api = self._record  # type: ignore[method-assign]

    def _record(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, url.split("?", maxsplit=1)[0].rsplit("/api/v1/", 1)[-1]))
        return self._call(method, url, *args, **kwargs)

    def take(self) -> list[tuple[str, str]]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def counted(api: ApiClient) -> Iterator[Counted]:
    counter = Counted(api)
    yield counter
    api.call_api = counter._call  # type: ignore[method-assign]


def _incompressible(size: int) -> str:
    """Text whose gzip is a little over `size` bytes."""
    return base64.b64encode(hashlib.shake_256(b"store").digest(size)).decode()


def test_sets_round_trip_and_shrink(api: ApiClient, namespace: str, owner: dict[str, Any]) -> None:
    ref = EvaluationRef.of(owner)
    store = DocumentStore(api)
    big = _incompressible(1_500_000)  # three ConfigMaps of at most 700 kB of compressed bytes
    assert len(build_configmaps(ref, "scenario-00", {"bundle.json": big})) == 3
    names = store.write(ref, "scenario-00", {"bundle.json": big, "result.json": "{}"})
    assert names == ["run-1-scenario-00", "run-1-scenario-00-1", "run-1-scenario-00-2"]
    store.write(ref, "report", {"report.html": "<p>ok</p>"})

    assert store.read(namespace, owner["metadata"]["uid"], "scenario-00") == {
        "bundle.json": big,
        "result.json": "{}",
    }
    assert store.read_all(namespace, owner["metadata"]["uid"]) == {
        "report": {"report.html": "<p>ok</p>"},
        "scenario-00": {"bundle.json": big, "result.json": "{}"},
    }

    # Written again, smaller: the parts it no longer needs are removed.
    assert store.write(ref, "scenario-00", {"result.json": "{}"}) == ["run-1-scenario-00"]
    query = {"labelSelector": f"{EVALUATION_UID_LABEL}={owner['metadata']['uid']}"}
    left = request(api, "GET", resource_path("ConfigMap", namespace), query=query)["items"]
    assert sorted(i["metadata"]["name"] for i in left) == ["run-1-report", "run-1-scenario-00"]
    assert store.read(namespace, owner["metadata"]["uid"], "scenario-00") == {"result.json": "{}"}


def test_a_new_set_costs_one_request_per_configmap(
    api: ApiClient, namespace: str, owner: dict[str, Any], counted: Counted
) -> None:
    ref = EvaluationRef.of(owner)
    store = DocumentStore(api)
    cms = f"namespaces/{namespace}/configmaps"
    store.write(ref, "scenario-03", {"bundle.json": '{"entries": []}', "result.json": "{}"})
    assert counted.take() == [("POST", cms)]  # no read before, no list of stale parts after

    # The same set again: found (409), read, and left alone as it holds the same; stale parts looked for.
    store.write(ref, "scenario-03", {"bundle.json": '{"entries": []}', "result.json": "{}"})
    assert counted.take() == [("POST", cms), ("GET", f"{cms}/run-1-scenario-03"), ("GET", cms)]

    # Changed: replaced in place.
    store.write(ref, "scenario-03", {"result.json": '{"outcome": "PASS"}'})
    calls = counted.take()
    assert ("PUT", f"{cms}/run-1-scenario-03") in calls
    assert store.read(namespace, owner["metadata"]["uid"], "scenario-03") == {
        "result.json": '{"outcome": "PASS"}'
    }


def test_the_documented_pipeline_reads_a_document(
    api: ApiClient, namespace: str, owner: dict[str, Any], cluster: Cluster
) -> None:
    # docs/stored-documents.md: one kubectl pipeline turns a stored file back into its text.
    verdict = "safety: PASS\nsummary: {}\n"
    DocumentStore(api).write(EvaluationRef.of(owner), "verdict", {"verdict.yaml": verdict})
    line = (
        f"{KUBECTLS['server']} get configmap run-1-verdict -n {namespace} "
        "-o jsonpath='{.binaryData.verdict\\.yaml\\.gz}' | base64 -d | gunzip"
    )
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    shown = subprocess.run(["bash", "-o", "pipefail", "-c", line], env=env, capture_output=True, text=True,
                           timeout=60, check=True)  # fmt: skip
    assert shown.stdout == verdict


def test_a_damaged_part_is_an_error_naming_it(api: ApiClient, namespace: str, owner: dict[str, Any]) -> None:
    store = DocumentStore(api)
    store.write(EvaluationRef.of(owner), "verdict", {"verdict.yaml": "safety: PASS\n" * 50})
    path = resource_path("ConfigMap", namespace, "run-1-verdict")
    cut = base64.b64encode(b"\x1f\x8b\x08\x00 not the rest").decode()
    request(api, "PATCH", path, {"binaryData": {"verdict.yaml.gz": cut}},
            content_type="application/merge-patch+json")  # fmt: skip
    with pytest.raises(DocumentError, match=rf"ConfigMap {namespace}/run-1-verdict key verdict\.yaml\.gz"):
        store.read(namespace, owner["metadata"]["uid"], "verdict")
