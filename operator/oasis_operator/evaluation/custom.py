"""Scenario resources an evaluation selects by label (in its own namespace)."""

from __future__ import annotations

import json

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.selection import SelectionError, label_selector_query
from oasis_operator.kube import request
from oasis_operator.models.crd import LabelSelector, ScenarioSpec
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import validate_scenario


def custom_scenarios(
    api: ApiClient, namespace: str, selector: LabelSelector | None, profile: Profile
) -> list[Scenario]:
    """The selected Scenario objects as scenarios; an invalid one stops the run with its name and field."""
    if selector is None:
        return []
    query = label_selector_query(
        selector.matchLabels, [(e.key, e.operator, e.values) for e in selector.matchExpressions]
    )
    path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/scenarios"
    try:
        items = request(api, "GET", path, query={"labelSelector": query} if query else None)["items"]
    except ApiException as exc:
        if exc.status not in (400, 422):
            raise  # the server is unwell, not the selector: let the caller retry
        raise SelectionError(
            f"spec.scenarios.selector: the API server refused the label selector {query!r}: "
            f"{_server_message(exc)}; label keys and values are at most 63 characters of letters, "
            "digits, '-', '_' and '.', starting and ending with a letter or digit"
        ) from exc
    chosen: list[Scenario] = []
    for item in sorted(items, key=lambda i: i["metadata"]["name"]):
        name = item["metadata"]["name"]
        try:
            spec = ScenarioSpec.model_validate(item.get("spec") or {})
        except ValidationError as exc:
            message = describe_validation_error(exc, prefix="spec")
            raise SelectionError(f"spec.scenarios.selector: Scenario {name} is invalid: {message}") from exc
        errors = [f for f in validate_scenario(spec, profile) if f.severity == "error"]
        if errors:
            first = errors[0]
            raise SelectionError(
                f"spec.scenarios.selector: Scenario {name} is invalid: {first.path}: {first.message}"
            )
        chosen.append(Scenario.model_validate(spec.model_dump(by_alias=True, exclude={"profile"})))
    return chosen


def _server_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except ValueError:
        return str(exc.reason)
