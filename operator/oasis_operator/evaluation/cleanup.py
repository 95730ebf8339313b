"""Removing what an evaluation left in the sandbox cluster."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator.environments.runtime import RuntimeSetupError, Sandboxes, SandboxTarget
from oasis_operator.evaluation.store import DocumentStore
from oasis_operator.kube import api_client
from oasis_operator.models.crd import EnvironmentSpec, OASISEvaluationSpec
from oasis_operator.sandbox.provider import SandboxProvider

log = logging.getLogger(__name__)


def sweep_orphans(
    sandbox_kubeconfig: Path, prefix: str, evaluation_exists: Callable[[str], bool]
) -> list[tuple[str, int]]:
    """Tear down every environment of ours whose evaluation is gone: (environment id, objects deleted)."""
    sandbox = api_client(sandbox_kubeconfig)
    try:
        reports = SandboxProvider(sandbox, prefix=prefix).collect_orphans(evaluation_exists)
    finally:
        sandbox.close()  # type: ignore[no-untyped-call]
    return [(report.environment_id, len(report.deleted)) for report in reports]


def teardown_for(target: SandboxTarget, evaluation: str, scenario_id: str | None = None) -> int:
    """Tear down the evaluation's environments (of one scenario when given) that are not yet being
    removed; how many there were. One whose namespaces are all terminating needs nothing more."""
    found = target.provider.environments_of(evaluation, scenario_id, removing=False)
    for env_id in found:
        target.provider.teardown(env_id, wait=False)
    return len(found)


async def teardown_evaluation(
    sandboxes: Sandboxes, host_api: ApiClient, meta: Mapping[str, Any], reference: str
) -> int:
    """Remove what is left of a deleted evaluation's sandboxes (nothing if its sandbox is unreachable)."""
    spec = EnvironmentSpec()
    try:
        body = await asyncio.to_thread(DocumentStore(host_api).read, meta["namespace"], meta["uid"], "run")
        if "spec.json" in body:
            spec = OASISEvaluationSpec.model_validate_json(body["spec.json"]).environment
    except Exception:  # noqa: BLE001 - the owned ConfigMaps may already be gone
        log.info("no frozen spec for %s; using the default sandbox", reference)
    try:
        async with sandboxes.target(host_api, meta["namespace"], meta["uid"], spec) as target:
            return await asyncio.to_thread(teardown_for, target, reference)
    except RuntimeSetupError as exc:
        log.warning("cannot reach the sandbox of %s: %s (the orphan collector will retry)", reference, exc)
        return 0
