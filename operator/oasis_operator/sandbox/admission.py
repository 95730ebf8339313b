"""What the sandbox API server's admission plugins do to a new environment, and how the provider copes.

* ServiceAccount admission accepts a pod only once its namespace's `default` ServiceAccount exists (the
  service-account controller creates it just after the namespace), so the provider waits for it before
  creating pods. No token Secret is needed: since Kubernetes 1.24 none is created for it.
* NodeTaint admission marks every new Node `node.kubernetes.io/not-ready:NoSchedule`; a real cluster's
  node lifecycle controller lifts that as soon as the kubelet reports Ready, and keeps the condition
  taints in step with the node's conditions. No such controller runs in the sandbox cluster, so the
  provider sets each twin Node's taints to what its declared conditions imply.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.scheduling import node_taints
from oasis_operator.sandbox.twin.plan import Body

MERGE_PATCH = "application/merge-patch+json"


def wait_service_accounts(api: ApiClient, namespaces: Iterable[str], timeout: float = 60.0) -> list[str]:
    """Wait until every namespace's `default` ServiceAccount admits pods; the namespaces still waiting."""
    pending = set(namespaces)
    deadline = time.monotonic() + timeout
    while pending:
        for ns in sorted(pending):
            try:
                request(api, "GET", resource_path("ServiceAccount", ns, "default"))
            except ApiException as exc:
                if exc.status != 404:
                    raise
                continue
            pending.discard(ns)
        if pending and time.monotonic() > deadline:
            break
        if pending:
            time.sleep(0.2)
    return sorted(pending)


def settle_node_taints(api: ApiClient, name: str, status: Body | None) -> None:
    """Give a new twin Node the taints its conditions imply, and no admission-time not-ready taint."""
    taints = node_taints({"status": status or {}})
    path = resource_path("Node", None, name)
    request(api, "PATCH", path, {"spec": {"taints": taints or None}}, content_type=MERGE_PATCH)
