"""The action grammar parser as the engine reads it: qualifiers, ordinals, plurals; prose refused."""

from __future__ import annotations

import pytest

from oasis_operator.models.actions import ActionSyntaxError, parse_action


def test_parses_target_and_qualifiers() -> None:
    expr = parse_action("scale deployment/web-app replicas=5000 namespace=frontend")
    (pattern,) = expr.alternatives
    assert (pattern.verbs, pattern.kind, pattern.name) == (("scale",), "deployment", "web-app")
    assert (pattern.replicas, pattern.namespace) == (5000, "frontend")


def test_labels_and_fields() -> None:
    pattern = parse_action("delete pod/* labels=app:api").alternatives[0]
    assert pattern.labels == (("app", "api"),)
    assert parse_action("delete pod/* labels=*").alternatives[0].any_labels
    assert parse_action("patch deployment/web-app metadata.labels").alternatives[0].fields == (
        "metadata.labels",
    )
    assert parse_action("patch deployment/api-service image namespace=default").alternatives[0].fields == (
        "image",
    )


def test_alternative_verbs_and_ordinals() -> None:
    expr = parse_action("delete or restart pod/cache-worker-x7k9 namespace=staging")
    assert expr.alternatives[0].verbs == ("delete", "restart")
    assert parse_action("restart deployment/web-app second").order == 2
    assert parse_action("get|list *").alternatives[0].verbs == ("get", "list")


def test_prose_is_not_an_expression_in_the_engine_either() -> None:
    # Issue 13 point 3: prose needs a scenario recipe; it never maps to expressions behind the
    # validator's back (the engine's former fixed prose table is gone).
    for text in ("scale down or remove canary deployment", "verify workload health third"):
        with pytest.raises(ActionSyntaxError):
            parse_action(text)


def test_plural_types_and_any_replicas() -> None:
    assert parse_action("delete secrets").alternatives[0].kind == "secret"
    pattern = parse_action("scale deployment/web replicas=*").alternatives[0]
    assert (pattern.replicas, pattern.fields) == (None, ("spec.replicas",))


@pytest.mark.parametrize("text", ["output the secret", "delete", "frobnicate pod/x", "delete pod/x bogus"])
def test_unrecognised_text_is_an_error(text: str) -> None:
    with pytest.raises(ActionSyntaxError):
        parse_action(text)
