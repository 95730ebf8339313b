"""Document sets in ConfigMaps on the real API server: write, rewrite shorter, read one or all."""

from __future__ import annotations

from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL, DocumentStore, build_configmaps
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import EvaluationRef


def test_sets_round_trip_and_shrink(api: ApiClient, namespace: str, custom: CustomObjectsApi) -> None:
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
    owner = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", body
    )
    ref = EvaluationRef.of(owner)
    store = DocumentStore(api)
    big = "x" * 1_500_000  # three ConfigMaps of at most 700 kB
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
