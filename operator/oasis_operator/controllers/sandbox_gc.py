"""At start-up, remove sandboxes left behind by evaluations that no longer exist."""

from __future__ import annotations

import logging
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.controllers.settings import operator_settings
from oasis_operator.environments.runtime import OperatorConfig
from oasis_operator.evaluation.cleanup import sweep_orphans
from oasis_operator.kube import api_client, request


def evaluation_exists(api: Any, reference: str) -> bool:
    """True if `namespace/name` names an existing OASISEvaluation (errors count as existing: keep it)."""
    namespace, _, name = reference.partition("/")
    if not namespace or not name:
        return False
    try:
        request(api, "GET", f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/oasisevaluations/{name}")
    except ApiException as exc:
        return bool(exc.status != 404)
    return True


@kopf.on.startup(retries=3, backoff=5)
def collect_orphan_sandboxes(
    memo: kopf.Memo, logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any
) -> None:
    """Tear down every environment of ours in the sandbox cluster whose evaluation is gone.

    Sandboxes live in the sandbox cluster (`OASIS_SANDBOX_KUBECONFIG`); whether their evaluation still
    exists is asked of the cluster the operator watches. Locally both are the same control plane. A
    sandbox cluster that does not answer yet (the chart starts its control plane beside the operator) is
    left for the next start: the sweep is housekeeping, and each evaluation checks the sandbox itself.
    """
    config = OperatorConfig.from_settings(operator_settings(memo))
    if config.sandbox_kubeconfig is None:
        logger.info("no default sandbox cluster configured; no sandboxes to sweep")
        return
    host = api_client()
    try:
        reports = sweep_orphans(
            config.sandbox_kubeconfig, config.sandbox_prefix, lambda ref: evaluation_exists(host, ref)
        )
    except (ApiException, HTTPError, OSError) as exc:
        logger.warning("sweep of orphaned sandboxes failed; it runs again at the next start: %s", exc)
        return
    finally:
        host.close()  # type: ignore[no-untyped-call]
    for environment_id, deleted in reports:
        logger.info("collected orphaned sandbox env=%s deleted=%d", environment_id, deleted)
