"""Discovery as the agent sees it, in both forms: the operator's group hidden, the gateway's groups added."""

from __future__ import annotations

from typing import Any

import pytest

from oasis_operator import API_GROUP
from oasis_operator.gateway.apis.resource_metrics import API_GROUP_ENTRY, RESOURCE_LIST
from oasis_operator.gateway.discovery import ServedGroups


def _aggregated(*names: str) -> dict[str, Any]:
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [
            {"metadata": {"name": n} if n else {}, "versions": [{"version": "v1", "freshness": "Current"}]}
            for n in names
        ],
    }


@pytest.fixture
def served() -> ServedGroups:
    groups = ServedGroups()
    groups.add(API_GROUP_ENTRY, RESOURCE_LIST)
    return groups


def test_the_aggregated_group_list_hides_the_operator_and_adds_metrics(served: ServedGroups) -> None:
    doc = served.clean(_aggregated("apps", API_GROUP, "batch"))
    assert [i["metadata"]["name"] for i in doc["items"]] == ["apps", "batch", "metrics.k8s.io"]
    metrics = doc["items"][-1]
    assert metrics["versions"] == [
        {
            "version": "v1beta1",
            "freshness": "Current",
            "resources": [
                {"resource": "nodes", "responseKind": {"group": "", "version": "", "kind": "NodeMetrics"},
                 "scope": "Cluster", "singularResource": "", "verbs": ["get", "list"]},
                {"resource": "pods", "responseKind": {"group": "", "version": "", "kind": "PodMetrics"},
                 "scope": "Namespaced", "singularResource": "", "verbs": ["get", "list"]},
            ],
        }
    ]  # fmt: skip


def test_the_core_list_gets_no_added_group(served: ServedGroups) -> None:
    core = _aggregated("")
    assert served.clean(core) == core


def test_the_legacy_group_list_keeps_its_filtering(served: ServedGroups) -> None:
    doc = {
        "kind": "APIGroupList",
        "groups": [{"name": "apps"}, {"name": API_GROUP}],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    }
    assert served.clean(doc) == {"kind": "APIGroupList", "groups": [{"name": "apps"}, API_GROUP_ENTRY]}


def test_a_group_is_listed_once_and_never_without_its_resources(served: ServedGroups) -> None:
    served.add(API_GROUP_ENTRY, RESOURCE_LIST)
    assert [g["metadata"]["name"] for g in served.aggregated] == ["metrics.k8s.io"]
    with pytest.raises(ValueError, match="api_resources"):
        served.add({"name": "custom.example"}, None)
