"""Building and removing one sandbox safely: what a cancelled or failed caller must never leave behind.

`provision` builds the sandbox in a thread and, if its caller is cancelled meanwhile, waits for the build
and removes what it made; a build that fails is a `ProviderFaultError` (the provider removed its part
already). `remove` never raises: a sandbox API server that stopped answering cannot be cleaned now, and
the orphan collector removes the environment at the next start (its namespaces carry the evaluation).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from oasis_operator.environments.dynamics import finish_anyway
from oasis_operator.metrics import PROVISION_DURATION
from oasis_operator.models.scenario import Scenario
from oasis_operator.sandbox.provider import SandboxError, SandboxProvider, SandboxRecord

log = logging.getLogger(__name__)


class ProviderFaultError(RuntimeError):
    """The sandbox could not be built or observed: the run aborts (Core: runtime PROVIDER_FAILURE)."""


async def provision(
    provider: SandboxProvider, scenario: Scenario, evaluation: str, env_id: str
) -> SandboxRecord:
    """Provision in a thread; if the caller is cancelled meanwhile, wait for it and remove the sandbox."""
    work = asyncio.ensure_future(asyncio.to_thread(provider.provision, scenario, evaluation, env_id))
    begun = time.monotonic()
    try:
        record = await asyncio.shield(work)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await work
        await finish_anyway(asyncio.to_thread(remove, provider, env_id))
        raise
    except SandboxError as exc:
        raise ProviderFaultError(str(exc)) from exc
    PROVISION_DURATION.observe(time.monotonic() - begun)
    return record


def remove(provider: SandboxProvider, env_id: str) -> None:
    """Remove the environment's sandbox (without waiting for its namespaces); a failure is logged."""
    try:
        provider.teardown(env_id, False)
    except Exception:
        log.exception("teardown failed env=%s", env_id)
