"""`oasis report get` of an evaluation MultiKueue ran in a worker cluster (docs/kueue.md).

The manager's object has the worker's status (MultiKueue copies it), whose `reportConfigMaps` name the
documents' ConfigMaps in the worker cluster, in the same namespace: the worker keeps them after MultiKueue
deleted its copy (evaluation/multikueue.py). The manager's Workload names the worker
(`status.clusterName`, a MultiKueueCluster). The CLI reads the documents only with credentials the user
gives for the worker (`--worker-kubeconfig`, `--worker-context`): it never takes Kueue's own from the
manager cluster.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.cli.common import UsageError, kube_target
from oasis_operator.evaluation.kueue_workload import KUEUE_GROUP, KUEUE_VERSION, workload_name
from oasis_operator.evaluation.store import EVALUATION_UID_LABEL
from oasis_operator.kube import request, resource_path
from oasis_operator.models.crd import MANAGED_BY_MULTIKUEUE, EvaluationRef


def add_worker_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "MultiKueue (an evaluation with spec.managedBy kueue.x-k8s.io/multikueue)"
    )
    group.add_argument(
        "--worker-kubeconfig", metavar="PATH", default=None,
        help="kubeconfig of the worker cluster that ran it (its documents are stored there)",
    )  # fmt: skip
    group.add_argument("--worker-context", metavar="NAME", default=None, help="context in that kubeconfig")


def ran_by_multikueue(evaluation: Mapping[str, Any]) -> bool:
    return (evaluation.get("spec") or {}).get("managedBy") == MANAGED_BY_MULTIKUEUE


def worker_of(workload: Mapping[str, Any] | None) -> str | None:
    """The MultiKueueCluster the manager's Workload was dispatched to, None before that."""
    status = (workload or {}).get("status") or {}
    name = status.get("clusterName")
    return str(name) if name else None


def document_uid(configmap: Mapping[str, Any]) -> str | None:
    """The worker copy's uid, read from one of its document ConfigMaps."""
    return ((configmap.get("metadata") or {}).get("labels") or {}).get(EVALUATION_UID_LABEL)


def _worker_name(api: ApiClient, evaluation: Mapping[str, Any]) -> str | None:
    owner = EvaluationRef.of(evaluation)
    path = (
        f"/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/namespaces/{owner.namespace}/workloads/{workload_name(owner)}"
    )
    try:
        return worker_of(request(api, "GET", path))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def worker_documents(
    args: argparse.Namespace, manager: ApiClient, evaluation: dict[str, Any]
) -> tuple[ApiClient, dict[str, Any]]:
    """The worker's API and the evaluation as its documents are labelled there (the copy's uid).

    UsageError naming the worker cluster and the flag to pass when no worker kubeconfig is given, or
    when the documents are not (or no longer) there."""
    meta = evaluation["metadata"]
    where = f"{meta['namespace']}/{meta['name']}"
    status = evaluation.get("status") or {}
    if not (args.worker_kubeconfig or args.worker_context):
        cluster = _worker_name(manager, evaluation)
        if cluster is None:
            raise UsageError(
                f"{where} is dispatched by MultiKueue and no worker cluster has taken it yet "
                f"(phase {status.get('phase') or 'Pending'}); its documents are written in the worker"
            )
        raise UsageError(
            f"{where} ran in the MultiKueue worker cluster {cluster!r} (MultiKueueCluster {cluster}), where "
            "its documents are stored: pass --worker-kubeconfig PATH (and --worker-context NAME) for it"
        )
    names = status.get("reportConfigMaps") or []
    if not names:
        raise UsageError(
            f"{where} has no report yet (phase {status.get('phase') or 'Pending'}); it is written when "
            "the evaluation completes or aborts"
        )
    target = kube_target(
        argparse.Namespace(kubeconfig=args.worker_kubeconfig, context=args.worker_context, namespace=None)
    )
    worker = target.client()
    try:
        found = request(worker, "GET", resource_path("ConfigMap", meta["namespace"], names[0]))
    except ApiException as exc:
        if exc.status != 404:
            raise
        raise UsageError(
            f"{where}: ConfigMap {meta['namespace']}/{names[0]} is not in the worker cluster of "
            "--worker-kubeconfig: is it the cluster that ran it, and are the documents past their "
            "retention (OASIS_MULTIKUEUE_DOCUMENT_RETENTION_SECONDS)?"
        ) from None
    uid = document_uid(found)
    if uid is None:
        raise UsageError(
            f"{where}: ConfigMap {names[0]} in the worker is not one of an evaluation's documents"
        )
    return worker, {**evaluation, "metadata": {**meta, "uid": uid}}
