"""At start-up, remove sandboxes left behind by evaluations that no longer exist."""

from __future__ import annotations

import logging
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import api_client, request
from oasis_operator.sandbox.provider import SandboxProvider

DEFAULT_PREFIX = "sbx"


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
def collect_orphan_sandboxes(logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any) -> None:
    """Tear down every environment of ours whose evaluation is gone."""
    api = api_client()
    try:
        provider = SandboxProvider(api, prefix=DEFAULT_PREFIX)
        reports = provider.collect_orphans(lambda ref: evaluation_exists(api, ref))
    finally:
        api.close()  # type: ignore[no-untyped-call]
    for report in reports:
        logger.info(
            "collected orphaned sandbox env=%s deleted=%d", report.environment_id, len(report.deleted)
        )
