"""What the sandbox API server's admission plugins do to a new environment, and how the provider copes.

* ServiceAccount admission accepts a pod only once its namespace's `default` ServiceAccount exists. The
  service-account controller creates it just after the namespace; the provider creates it itself before
  the twin's pods, in the namespaces that get some (a conflict when the controller was first), which
  saves the admission's wait for the controller. Elsewhere (the control namespace, a declared namespace
  without pods) the controller's own `default` serves, as on a real cluster, for any pod created later
  by the agent or the twin dynamics. No token Secret is needed: since Kubernetes 1.24 none is created.
* A Node keeps the status it is created with (the API server clears status on create for pods and
  workloads, not for Nodes: a kubelet registers its node that way), so a twin Node is created with its
  declared status and the taints its conditions imply, in one write. Should a server drop any of that
  status, the provider writes it through the status subresource after all.
* NodeTaint admission (`TaintNodesByCondition`) marks every new Node `node.kubernetes.io/not-ready:
  NoSchedule`; a real cluster's node lifecycle controller lifts that as soon as the kubelet reports
  Ready, and keeps the condition taints in step with the node's conditions. No such controller runs in
  the sandbox cluster, so the provider patches a twin Node's taints to what its declared conditions imply
  whenever the create's answer holds other taints. The local plane (and the chart's sandbox plane) runs
  without that plugin: there the answer already has the right taints and the patch is skipped; on any
  other API server the patch settles them. The agent can never write Nodes (`sandbox.rbac`), so no Node
  but the twin's is created in a sandbox.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.scheduling import node_taints
from oasis_operator.sandbox.twin.plan import Body

MERGE_PATCH = "application/merge-patch+json"
DEFAULT_SERVICE_ACCOUNT = "default"


def ensure_default_service_account(api: ApiClient, namespace: str) -> None:
    """Create the namespace's `default` ServiceAccount unless the controller was first (a 409)."""
    body = {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}}
    try:
        request(api, "POST", resource_path("ServiceAccount", namespace), body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def node_taints_of(body: Body, status: Body | None) -> list[Body]:
    """The taints a twin Node should carry: its own, with the condition taints its status implies."""
    return node_taints({"spec": body.get("spec") or {}, "status": status or {}})


def node_create_body(body: Body, status: Body | None) -> Body:
    """The twin Node as created: its body with the declared status and the taints that implies."""
    spec = {k: v for k, v in (body.get("spec") or {}).items() if k != "taints"}
    taints = node_taints_of(body, status)
    if taints:
        spec["taints"] = taints
    node = {**body, "spec": spec}
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


def taints_to_write(answer: Body, taints: list[Body]) -> list[Body] | None:
    """`taints` when the Node as the server answered carries others (e.g. NodeTaint admission's
    not-ready one), None when it already has exactly them and no write is needed."""
    stored = (answer.get("spec") or {}).get("taints") or []
    return None if stored == taints else taints


def settle_node_taints(api: ApiClient, name: str, taints: list[Body]) -> Body:
    """Set a twin Node's taints (dropping the admission-time not-ready one); the Node as answered."""
    path = resource_path("Node", None, name)
    patched: Body = request(
        api, "PATCH", path, {"spec": {"taints": taints or None}}, content_type=MERGE_PATCH
    )
    return patched
