"""Fixtures for end-to-end tests: the operator as a process, watching the test's namespace."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import Cluster
from tests.e2e.support import OperatorProcess

PLURAL = "oasisevaluations"


@pytest.fixture
def operator(cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """A running `oasis operator -n <namespace>`; stopped (SIGTERM) after the test, whatever happened.

    Before it stops, the test's evaluations are deleted while it still runs, so that its own deletion
    handler (sandboxes, Kueue Workload) releases them: none is left behind, finalizer and all, in a
    terminating namespace for a later test's operator watching every namespace to find."""
    process = OperatorProcess(cluster, namespace, tmp_path).start()
    try:
        yield process
    finally:
        try:
            release_evaluations(CustomObjectsApi(api), namespace)
        finally:
            process.stop()


def release_evaluations(custom: CustomObjectsApi, namespace: str, timeout: float = 90.0) -> None:
    """Delete every OASISEvaluation of `namespace` and wait until they are gone; what the operator did
    not release in `timeout` (it had died) loses its finalizers so that the namespace can go."""
    items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)["items"]
    for item in items:
        try:
            custom.delete_namespaced_custom_object(
                API_GROUP, API_VERSION, namespace, PLURAL, item["metadata"]["name"]
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
    deadline = time.monotonic() + timeout
    while items and time.monotonic() < deadline:
        time.sleep(0.5)
        items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)["items"]
    for item in items:
        try:
            custom.patch_namespaced_custom_object(
                API_GROUP,
                API_VERSION,
                namespace,
                PLURAL,
                item["metadata"]["name"],
                {"metadata": {"finalizers": None}},
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
