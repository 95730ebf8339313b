"""The control namespace every environment of a prefix shares: created once, and checked to be usable.

Each environment keeps its agent ServiceAccount (`agent-<environment id>`) and its record ConfigMap
(`environment-<environment id>`) there, labelled with the environment; teardown removes them by that
label and leaves the namespace. One namespace per environment would cost a namespace-controller sweep
each at teardown (~31 collection deletes and their lists; ~0.2 s of control-plane CPU per namespace,
bench/results/namespace_cost.md), most of what removing an environment costs.
"""

from __future__ import annotations

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path

REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class ControlNamespaceError(RuntimeError):
    """The control namespace cannot be used; the message says why and what to do."""


def ensure_control_namespace(api: ApiClient, name: str, labels: dict[str, str]) -> None:
    """Create the namespace unless it is there (a 409: another provider or the chart was first), then
    check that this identity may impersonate its ServiceAccounts."""
    try:
        request(api, "POST", resource_path("Namespace"), {"metadata": {"name": name, "labels": labels}})
    except ApiException as exc:
        if exc.status != 409:
            raise ControlNamespaceError(
                f"creating the control namespace {name} failed ({exc.status}): {exc.body}"
            ) from exc
        live = request(api, "GET", resource_path("Namespace", None, name))
        if live["metadata"].get("deletionTimestamp"):
            raise ControlNamespaceError(
                f"the control namespace {name} is being deleted: run again once it is gone"
            ) from exc
    check_impersonation(api, name)


def check_impersonation(api: ApiClient, namespace: str) -> None:
    """The gateway forwards as the agent ServiceAccounts of `namespace`: where this identity (the
    gateway's too in the chart's host mode) may not impersonate them, every agent request would be
    refused, so this stops provisioning and says what to grant."""
    attributes = {"namespace": namespace, "verb": "impersonate", "resource": "serviceaccounts"}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    answer = request(api, "POST", REVIEWS, review)
    if not (answer.get("status") or {}).get("allowed"):
        raise ControlNamespaceError(
            f"this identity may not impersonate ServiceAccounts in the control namespace {namespace}, so "
            "the gateway could not forward the agent's requests: grant impersonate on serviceaccounts in "
            f"{namespace} (the chart's host mode grants it for <sandbox.prefix>-control only, so an "
            "evaluation's spec.environment.namespacePrefix must equal sandbox.prefix there)"
        )
