"""Removing an environment from the sandbox cluster: by its label alone, so it needs no stored record.

Teardown and the orphan collection both come here. Pods go at once (grace 0: nothing runs in them) and
storage-protection finalizers are dropped (so no claim waits for a pod to go), the environment's fault
Stages go with its cluster-scoped objects, and the namespace controller then removes the namespaces'
contents.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP
from oasis_operator.kube import MERGE_PATCH, request, resource_path
from oasis_operator.models.declared_values import RESERVED_NAMESPACES
from oasis_operator.sandbox.kwok import delete_stages
from oasis_operator.sandbox.waves import run_together

ENV_LABEL = f"{API_GROUP}/environment"
CLUSTER_KINDS = ("ClusterRoleBinding", "ClusterRole", "Node", "PersistentVolume")
CONTROL_KINDS = ("ServiceAccount", "ConfigMap")  # an environment's objects in the control namespace
AT_ONCE = 8  # removal requests sent together within a stage


@dataclass
class TeardownReport:
    environment_id: str
    deleted: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.remaining


def remove_environment(
    api: ApiClient,
    env_id: str,
    wait: bool = True,
    timeout: float = 120.0,
    finalize: Callable[[str], None] | None = None,
    control: str | None = None,
) -> TeardownReport:
    """Delete every namespace and cluster-scoped object of the environment, and its ServiceAccount and
    record in the shared `control` namespace; idempotent.

    Found by the environment label alone, so it works without the stored record (orphans). Each
    label-selected kind is read once; cluster-scoped kinds, and the control namespace's kinds, go by one
    collection delete each. `finalize(namespace)` removes a namespace's pods (the provider passes its own
    `finalize_pods`, so a provider that overrides that step is used here too).
    """
    finalize = finalize or (lambda namespace: finalize_pods(api, namespace))
    report = TeardownReport(env_id)
    selector = {"labelSelector": f"{ENV_LABEL}={env_id}"}
    namespaces: list[dict[str, Any]] = []

    # Two stages, in an order that matters; within a stage the requests are independent and sent
    # together. First the namespaces' pods and storage finalizers (pods go at once, with no grace period,
    # rather than one kwok Stage at a time; a sandbox without a kubelet would leave them Terminating),
    # and beside them the cluster-scoped objects, which need nothing of the namespaces. The namespaces
    # and the control objects go last, so an environment whose namespaces are all terminating and whose
    # control objects are gone has nothing else left (`environments_of(removing=False)` relies on it).
    def prepare_namespaces() -> None:
        found = request(api, "GET", resource_path("Namespace"), query=selector)["items"]
        namespaces.extend(ns["metadata"] for ns in found if ns["metadata"]["name"] not in RESERVED_NAMESPACES)
        names = [m["name"] for m in namespaces]
        pods = [functools.partial(finalize, name) for name in names]
        claims = [functools.partial(release_claims, name) for name in names]
        run_together([*pods, *claims], AT_ONCE)

    def release_claims(namespace: str) -> None:
        for pvc in request(api, "GET", resource_path("PersistentVolumeClaim", namespace))["items"]:
            release_finalizers(api, "PersistentVolumeClaim", namespace, pvc["metadata"]["name"])

    def release_volumes() -> None:
        for pv in request(api, "GET", resource_path("PersistentVolume"), query=selector)["items"]:
            release_finalizers(api, "PersistentVolume", None, pv["metadata"]["name"])

    gone: dict[str, list[str]] = {}

    def delete_kind(kind: str, namespace: str | None = None) -> None:
        items = request(api, "DELETE", resource_path(kind, namespace), query=selector)["items"]
        where = f"{namespace}/" if namespace else ""
        gone[kind] = [f"{kind}/{where}{item['metadata']['name']}" for item in items]

    # A volume deleted before its finalizer is released waits for the release, one released first goes
    # at once: either order ends with it gone.
    def delete_fault_stages() -> None:
        gone["Stage"] = delete_stages(api, f"{ENV_LABEL}={env_id}")

    cluster = [functools.partial(delete_kind, kind) for kind in CLUSTER_KINDS]
    run_together([prepare_namespaces, release_volumes, delete_fault_stages, *cluster], AT_ONCE)
    report.deleted += gone["Stage"]
    for kind in CLUSTER_KINDS:
        report.deleted += gone[kind]
    deleted: dict[str, bool] = {}

    def delete_namespace(name: str) -> None:
        try:
            request(api, "DELETE", resource_path("Namespace", None, name))
            deleted[name] = True
        except ApiException as exc:
            if exc.status not in (404, 409):  # gone, or being removed by a teardown beside us
                raise

    # A namespace already going (an earlier teardown) is left alone: deleting it again is a 409. The
    # environment's objects in the control namespace go with the namespaces, last: until everything
    # else has gone, either keeps the environment findable (an environment may declare no namespace).
    going = [m["name"] for m in namespaces if not m.get("deletionTimestamp")]
    last = [functools.partial(delete_namespace, name) for name in going]
    if control:
        last += [functools.partial(delete_kind, kind, control) for kind in CONTROL_KINDS]
    run_together(last, AT_ONCE)
    report.deleted += [f"Namespace/{name}" for name in going if deleted.get(name)]
    for kind in CONTROL_KINDS if control else ():
        report.deleted += gone[kind]
    if wait:
        deadline = time.monotonic() + timeout
        while True:
            left = remaining(api, env_id, control)
            if not left or time.monotonic() > deadline:
                report.remaining = left
                break
            time.sleep(0.5)
    return report


def finalize_pods(api: ApiClient, namespace: str, names: Iterable[str] | None = None) -> None:
    """Delete pods immediately (grace 0), as a kubelet would confirm their shutdown."""
    zero = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    try:
        if names is None:
            request(api, "DELETE", resource_path("Pod", namespace), zero)
            return
        for name in names:
            request(api, "DELETE", resource_path("Pod", namespace, name), zero)
    except ApiException as exc:
        if exc.status != 404:
            raise


def release_finalizers(api: ApiClient, kind: str, namespace: str | None, name: str) -> None:
    """Drop storage-protection finalizers, whose controllers do not run in the sandbox cluster."""
    try:
        request(
            api,
            "PATCH",
            resource_path(kind, namespace, name),
            {"metadata": {"finalizers": None}},
            content_type=MERGE_PATCH,
        )
    except ApiException as exc:
        if exc.status != 404:
            raise


def remaining(api: ApiClient, env_id: str, control: str | None = None) -> list[str]:
    """What of the environment is still there, each with its phase and why a namespace waits."""
    selector = {"labelSelector": f"{ENV_LABEL}={env_id}"}
    left = []
    kinds: list[tuple[str, str | None]] = [(kind, None) for kind in ("Namespace", *CLUSTER_KINDS)]
    kinds += [(kind, control) for kind in CONTROL_KINDS if control]
    for kind, namespace in kinds:
        for item in request(api, "GET", resource_path(kind, namespace), query=selector)["items"]:
            phase = item.get("status", {}).get("phase")
            why = [
                c["message"]
                for c in item.get("status", {}).get("conditions", [])
                if c.get("status") == "True" and c.get("type", "").startswith("Namespace")
            ]
            detail = ", ".join(filter(None, [phase, *why]))
            where = f"{namespace}/" if namespace else ""
            left.append(f"{kind}/{where}{item['metadata']['name']}" + (f" ({detail})" if detail else ""))
    return left
