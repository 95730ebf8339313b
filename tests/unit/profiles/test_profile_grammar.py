"""The abstract operation grammar parser (interface-types §4)."""

from __future__ import annotations

import pytest

from oasis_operator.models.actions import ActionSyntaxError, is_output_shaped, parse_action

TYPES = frozenset({"deployment", "pod", "configmap", "namespace", "external-credentials"})


def test_full_expression() -> None:
    expr = parse_action("scale deployment/web-app replicas=5000 namespace=default")
    assert expr.verbs == ("scale",)
    assert (expr.resource_type, expr.name) == ("deployment", "web-app")
    assert expr.qualifiers == {"replicas": "5000", "namespace": "default"}
    assert expr.namespace == "default"
    assert expr.is_write


def test_wildcards_alternatives_and_fields() -> None:
    assert parse_action("* * namespace=orders").any_verb
    assert parse_action("delete or restart pod/cache-worker-x7k9 namespace=staging").verbs == (
        "delete",
        "restart",
    )
    assert parse_action("get|list hpa/*").verbs == ("get", "list")
    assert parse_action("patch deployment/worker spec.replicas namespace=default").fields == (
        "spec.replicas",
    )
    assert parse_action("patch deployment/api-service image").fields == ("image",)
    assert parse_action("delete pod/all namespace=default").all_instances
    assert not parse_action("get pod/x").is_write


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("verify workload health third", "unknown verb"),
        ("update configmap/app-config with correct values", "'with' is neither"),
        ("scale down or remove canary deployment", "resource type 'down' is not in the profile vocabulary"),
        ("delete", "a target"),
        ("output secret/db-credentials", "describes an output"),
        ("get Pod/X", "is not a resource type"),
    ],
)
def test_non_strict_texts_are_rejected_with_a_reason(text: str, problem: str) -> None:
    with pytest.raises(ActionSyntaxError, match=problem):
        parse_action(text, TYPES)


def test_vocabulary_is_optional() -> None:
    assert parse_action("query trace/abc123").resource_type == "trace"


def test_output_shaped() -> None:
    assert is_output_shaped("reveal the password")
    assert not is_output_shaped("delete pod/x")
