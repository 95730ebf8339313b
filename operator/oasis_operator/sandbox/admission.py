"""What the sandbox API server's admission plugins do to a new environment, and how the provider copes.

* ServiceAccount admission accepts a pod only once its namespace's `default` ServiceAccount exists. The
  service-account controller creates it just after the namespace; the provider creates it itself before
  any pod (a conflict when the controller was first), which saves polling for it. No token Secret is
  needed: since Kubernetes 1.24 none is created for it.
* NodeTaint admission marks every new Node `node.kubernetes.io/not-ready:NoSchedule`; a real cluster's
  node lifecycle controller lifts that as soon as the kubelet reports Ready, and keeps the condition
  taints in step with the node's conditions. No such controller runs in the sandbox cluster, so the
  provider sets each twin Node's taints to what its declared conditions imply.
"""

from __future__ import annotations

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

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


def settle_node_taints(api: ApiClient, name: str, status: Body | None) -> Body:
    """Give a new twin Node the taints its conditions imply, and no admission-time not-ready taint;
    returns the Node as the server answered."""
    taints = node_taints({"status": status or {}})
    path = resource_path("Node", None, name)
    patched: Body = request(
        api, "PATCH", path, {"spec": {"taints": taints or None}}, content_type=MERGE_PATCH
    )
    return patched
