"""An OASISEvaluation across clusters with MultiKueue: the manager cluster's part, and the documents a
worker keeps.

Manager cluster (`spec.managedBy: kueue.x-k8s.io/multikueue` and a queue label): the operator makes the
evaluation's Workload, owned by the evaluation as its controller (MultiKueue finds its adapter, the
external framework `OASISEvaluation.v1alpha1.oasis.evaluation.dev`, from that owner), and does nothing
else: no run, no status (MultiKueue copies the worker's whole `status` over the manager's), no finalizer.
Deleting the evaluation deletes the Workload by garbage collection, and MultiKueue removes the copy.

Worker cluster: MultiKueue creates the copy (no `spec.managedBy`, labelled with its prebuilt Workload and
its origin), the operator runs it like any queued evaluation (`evaluation.queueing`), and once the
manager's Workload is finished MultiKueue deletes the copy. Its documents (report, verdict, evidence)
would go with it; so when a finished copy is deleted its document ConfigMaps are kept: their owner
reference is removed and they are labelled `oasis.evaluation.dev/kept-for: multikueue` with the time
after which the worker's operator removes them (`oasis.evaluation.dev/delete-after`). The manager's
status names them (`status.reportConfigMaps`), and `oasis report get --worker-kubeconfig` reads them.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Mapping
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP
from oasis_operator.evaluation.kueue_workload import ORIGIN_LABEL, prebuilt_workload_of
from oasis_operator.evaluation.queueing import KueueGate, QueueSettings
from oasis_operator.evaluation.start import Notify
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL
from oasis_operator.kube import request, resource_path

KEPT_LABEL = f"{API_GROUP}/kept-for"
KEPT_VALUE = "multikueue"
DELETE_AFTER = f"{API_GROUP}/delete-after"
TERMINAL_PHASES = ("Completed", "Aborted", "Failed")


async def keep_manager_workload(
    api: ApiClient, settings: QueueSettings, body: Mapping[str, Any], notify: Notify
) -> str:
    """Make the manager's Workload of a MultiKueue evaluation unless it exists; its name.

    `Refused` (its reason and a message naming the fix) when Kueue is not installed, the priority class
    is missing or Kueue rejects the Workload."""
    gate = KueueGate(api, settings, body, notify)
    await gate.ensure()
    return gate.name


def is_multikueue_copy(labels: Mapping[str, str] | None) -> bool:
    """A worker cluster's copy of a manager's evaluation, made by MultiKueue."""
    return bool((labels or {}).get(ORIGIN_LABEL)) and prebuilt_workload_of(labels) is not None


def kept_patch(configmap: Mapping[str, Any], uid: str, delete_after: str) -> dict[str, Any] | None:
    """The merge patch that keeps one of the copy's document ConfigMaps after the copy is gone (owner
    reference to it removed, labelled, expiry annotated); None when it needs none."""
    meta = configmap.get("metadata") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("uid") != uid]
    labelled = (meta.get("labels") or {}).get(KEPT_LABEL) == KEPT_VALUE
    if labelled and len(owners) == len(meta.get("ownerReferences") or []):
        return None
    return {
        "metadata": {
            "ownerReferences": owners or None,
            "labels": {KEPT_LABEL: KEPT_VALUE},
            "annotations": {DELETE_AFTER: delete_after},
        }
    }


def delete_after(now: datetime.datetime, retention_seconds: float) -> str:
    """The RFC 3339 time after which kept documents are removed."""
    when = now.astimezone(datetime.UTC) + datetime.timedelta(seconds=retention_seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def expired(configmap: Mapping[str, Any], now: datetime.datetime) -> bool:
    """A kept ConfigMap whose time is up (one without a readable time is kept)."""
    raw = ((configmap.get("metadata") or {}).get("annotations") or {}).get(DELETE_AFTER)
    try:
        when = datetime.datetime.strptime(str(raw), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return False
    return now >= when


def _documents_of(api: ApiClient, namespace: str, uid: str) -> list[dict[str, Any]]:
    query = {"labelSelector": f"{EVALUATION_UID_LABEL}={uid}"}
    items: list[dict[str, Any]] = request(api, "GET", resource_path("ConfigMap", namespace), query=query)[
        "items"
    ]
    return items


async def keep_copy_documents(api: ApiClient, body: Mapping[str, Any], retention_seconds: float) -> int:
    """Keep a finished MultiKueue copy's documents past its deletion; how many ConfigMaps were kept.

    Nothing for any other evaluation, or for a copy that did not finish (its documents are partial)."""
    meta = body.get("metadata") or {}
    phase = (body.get("status") or {}).get("phase")
    if not is_multikueue_copy(meta.get("labels")) or phase not in TERMINAL_PHASES:
        return 0
    until = delete_after(datetime.datetime.now(datetime.UTC), retention_seconds)
    kept = 0
    for item in await asyncio.to_thread(_documents_of, api, meta["namespace"], meta["uid"]):
        patch = kept_patch(item, meta["uid"], until)
        if patch is None:
            continue
        path = resource_path("ConfigMap", meta["namespace"], item["metadata"]["name"])
        await asyncio.to_thread(request, api, "PATCH", path, patch, None, "application/merge-patch+json")
        kept += 1
    return kept


def remove_expired_documents(api: ApiClient, namespace: str | None) -> list[str]:
    """Delete the kept documents whose time is up (in `namespace`, or all); their names."""
    where = resource_path("ConfigMap", namespace) if namespace else "/api/v1/configmaps"
    items = request(api, "GET", where, query={"labelSelector": f"{KEPT_LABEL}={KEPT_VALUE}"})["items"]
    now, removed = datetime.datetime.now(datetime.UTC), []
    for item in items:
        if not expired(item, now):
            continue
        meta = item["metadata"]
        try:
            request(api, "DELETE", resource_path("ConfigMap", meta["namespace"], meta["name"]))
        except ApiException as exc:
            if exc.status != 404:
                raise
        removed.append(f"{meta['namespace']}/{meta['name']}")
    return removed
