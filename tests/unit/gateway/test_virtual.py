"""Namespace virtualisation: requests to sandbox names, responses back to declared names."""

from __future__ import annotations

import json

from oasis_operator.gateway.protowire import K8S_MAGIC, rewrite_protobuf
from oasis_operator.gateway.requestinfo import parse_request
from oasis_operator.gateway.virtual import NameMap, object_name, provider_object_filter
from oasis_operator.sandbox.rbac import ROLE_NAME
from tests.unit.gateway.helpers import environment


def test_paths_use_sandbox_names_and_unknown_namespaces_get_names_that_exist_nowhere() -> None:
    names = NameMap(environment())
    pods = names.request_info(parse_request("GET", "/api/v1/namespaces/default/pods"))
    assert pods.path() == "/api/v1/namespaces/ev-abc123-default/pods"
    ns = names.request_info(parse_request("GET", "/api/v1/namespaces/prod"))
    assert ns.path() == "/api/v1/namespaces/ev-abc123-prod"
    node = names.request_info(parse_request("GET", "/api/v1/nodes/worker-1"))
    assert node.path() == "/api/v1/nodes/ev-abc123-worker-1"
    unknown = names.request_info(parse_request("GET", "/api/v1/namespaces/kube-system/pods"))
    assert unknown.namespace.startswith("ev-abc123-x")
    assert unknown.namespace not in {"kube-system", "ev-abc123-default", "ev-abc123-prod"}
    assert names.declared_text(f'namespace "{unknown.namespace}"') == 'namespace "kube-system"'


def test_request_bodies_translate_namespace_references_but_not_data() -> None:
    names = NameMap(environment())
    body = {
        "kind": "RoleBinding",
        "metadata": {"name": "x", "namespace": "default", "labels": {"namespace": "default"}},
        "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "prod"}],
        "data": {"namespace": "default"},
        "spec": {"nodeName": "worker-1"},
    }
    out = names.request_body(body)
    assert out["metadata"]["namespace"] == "ev-abc123-default"
    assert out["metadata"]["labels"] == {"namespace": "default"}
    assert out["subjects"][0]["namespace"] == "ev-abc123-prod"
    assert out["data"] == {"namespace": "default"}
    assert out["spec"]["nodeName"] == "ev-abc123-worker-1"
    namespace = names.request_body({"kind": "Namespace", "metadata": {"name": "prod"}})
    assert namespace["metadata"]["name"] == "ev-abc123-prod"


def test_field_selectors() -> None:
    names = NameMap(environment())
    selector = (
        "involvedObject.namespace=default,involvedObject.name=worker-1,spec.nodeName!=worker-1,"
        "status.phase=Running"
    )
    assert names.field_selector(selector) == (
        "involvedObject.namespace=ev-abc123-default,involvedObject.name=ev-abc123-worker-1,"
        "spec.nodeName!=ev-abc123-worker-1,status.phase=Running"
    )


def test_responses_hide_sandbox_names_bookkeeping_and_credentials() -> None:
    names = NameMap(environment())
    table = {
        "kind": "Table",
        "rows": [
            {"cells": ["default-token-x", "kubernetes.io/service-account-token", 3],
             "object": {"metadata": {"name": "default-token-x"}}},
            {"cells": ["db", "Opaque", 1],
             "object": {"metadata": {"name": "db",
                                     "labels": {"oasis.evaluation.dev/env": "abc123", "app": "db"}}}},
        ],
    }  # fmt: skip
    cleaned = names.response_document(table)
    assert [object_name(r) for r in cleaned["rows"]] == ["db"]
    assert cleaned["rows"][0]["object"]["metadata"]["labels"] == {"app": "db"}
    message = (
        'User "system:serviceaccount:ev-abc123-ctl:agent" cannot list pods in the namespace "ev-abc123-prod"'
    )
    assert (
        names.declared_text(message)
        == 'User "system:serviceaccount:default:agent" cannot list pods in the namespace "prod"'
    )
    listing = {"items": [{"metadata": {"name": "ev-abc123-default"}}, {"metadata": {"name": "kube-system"}}]}
    kept = names.response_document(listing, keep=lambda i: object_name(i) in names.sandbox_namespaces)
    assert json.loads(names.declared_text(json.dumps(kept))) == {"items": [{"metadata": {"name": "default"}}]}


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_protobuf_bodies_translate_exact_string_fields() -> None:
    names = NameMap(environment())
    attributes = _field(1, b"default") + _field(2, b"get") + _field(5, b"pods")
    review = _field(1, attributes)
    body = K8S_MAGIC + _field(1, _field(1, b"authorization.k8s.io/v1")) + _field(2, review)
    out = rewrite_protobuf(body, names.translate_exact)
    expected_attributes = _field(1, b"ev-abc123-default") + _field(2, b"get") + _field(5, b"pods")
    assert out == K8S_MAGIC + _field(1, _field(1, b"authorization.k8s.io/v1")) + _field(
        2, _field(1, expected_attributes)
    )
    assert rewrite_protobuf(b"not protobuf", names.translate_exact) == b"not protobuf"
    assert rewrite_protobuf(K8S_MAGIC + b"\xff\xff", names.translate_exact) == K8S_MAGIC + b"\xff\xff"


def test_the_provider_s_bookkeeping_is_hidden_and_everything_else_kept() -> None:
    names = NameMap(environment())
    control_owner = {"apiVersion": "v1", "kind": "Namespace", "name": "ev-abc123-ctl", "uid": "u-ctl"}
    real_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-7d9", "uid": "u-rs"}
    managed = [
        {"manager": "oasis-operator", "operation": "Update", "fieldsV1": {"f:spec": {}}},
        {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:data": {}}},
    ]
    namespace = {
        "kind": "Namespace",
        "metadata": {
            "name": "ev-abc123-default",
            "labels": {"oasis.evaluation.dev/environment": "abc123", "security-zone": "dmz"},
            "ownerReferences": [control_owner],
            "managedFields": managed[:1],
        },
    }
    shown = names.response_document(namespace)["metadata"]
    assert shown == {"name": "ev-abc123-default", "labels": {"security-zone": "dmz"}}
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "ownerReferences": [control_owner, real_owner], "managedFields": managed},
    }
    shown = names.response_document({"kind": "PodList", "items": [pod]})["items"][0]["metadata"]
    assert shown["ownerReferences"] == [real_owner]
    assert [m["manager"] for m in shown["managedFields"]] == ["kubectl"]


def test_the_agent_s_own_rbac_objects_are_filtered_by_name() -> None:
    keep = provider_object_filter(
        parse_request("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings")
    )
    assert keep is not None
    assert not keep({"metadata": {"name": ROLE_NAME}})
    assert keep({"metadata": {"name": "team-read"}})
    assert provider_object_filter(parse_request("GET", "/api/v1/namespaces/default/configmaps")) is None
