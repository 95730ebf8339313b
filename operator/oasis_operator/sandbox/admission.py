"""What the sandbox API server's admission plugins do to a new environment, and how the provider copes.

* ServiceAccount admission accepts a pod only once its namespace's `default` ServiceAccount exists. The
  service-account controller creates it just after the namespace; the provider creates it itself before
  the twin's workloads, in the namespaces that have some (a conflict when the controller was first), which
  saves the controllers' retries of pods the admission refused. Elsewhere (the control namespace, a
  declared namespace without workloads) the controller's own `default` serves, as on a real cluster.
* A Node keeps the status it is created with (the API server clears status on create for pods and
  workloads, not for Nodes: a kubelet registers its node that way), so a twin Node is created with its
  declared status in one write. Should a server drop any of that status, the provider writes it through
  the status subresource after all. NodeTaint admission taints the new Node `not-ready` and the node
  lifecycle controller lifts it once it sees the node Ready and its Lease renewed (kwok renews it), and
  keeps the condition taints (memory pressure, ...) in step with the declared conditions, as on any
  cluster. The agent can never write Nodes (`sandbox.rbac`), so no Node but the twin's is created.
* PodNodeSelector and PodTolerationRestriction give every pod of an environment's namespaces the node
  selector and toleration of the environment's own nodes (`twin.resources.pool_annotations`).
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.twin.plan import Body

DEFAULT_SERVICE_ACCOUNT = "default"


def ensure_default_service_account(api: ApiClient, namespace: str) -> None:
    """Create the namespace's `default` ServiceAccount unless the controller was first (a 409)."""
    body = {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}}
    try:
        request(api, "POST", resource_path("ServiceAccount", namespace), body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def node_create_body(body: Body, status: Body | None) -> Body:
    """The twin Node as created: its body with the declared status."""
    node = dict(body)
    if status is not None:
        node["status"] = status
    return node


QUANTITY_MAPS = frozenset({"capacity", "allocatable"})


def _same_quantity(stored: Any, declared: Any) -> bool:
    """True when two resource quantities are one amount (the server keeps `4000m` as `4`)."""
    try:
        return bool(parse_quantity(stored) == parse_quantity(declared))  # type: ignore[no-untyped-call]
    except (TypeError, ValueError):
        return False


def _holds(stored: Any, declared: Any, quantities: bool = False) -> bool:
    """True when `stored` has every declared value (maps: key by key; defaults the server added aside;
    resource quantities by amount, as the server writes them in canonical form)."""
    if isinstance(declared, dict):
        return isinstance(stored, dict) and all(
            _holds(stored.get(k), v, quantities or k in QUANTITY_MAPS) for k, v in declared.items()
        )
    return bool(stored == declared) or (quantities and _same_quantity(stored, declared))


def status_kept(answer: Body, status: Body | None) -> bool:
    """True when the create's answer holds the whole declared status (no status write is needed)."""
    return status is None or _holds(answer.get("status"), status)
