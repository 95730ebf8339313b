"""Operator start-up: identity under our API group, timeouts, limits, probes."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from oasis_operator import API_GROUP, __version__
from oasis_operator.profiles import default_profile_path, load_profile

FINALIZER = f"{API_GROUP}/finalizer"

# Every handler is bounded: kopf would otherwise retry forever.
HANDLER_LIMITS: dict[str, Any] = {"retries": 5, "timeout": 120, "backoff": 5}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Apply the settings every well-behaved kopf operator sets explicitly; load the profile once."""
    memo.profile = load_profile(default_profile_path())
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=API_GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=API_GROUP, key="last-handled-configuration"
    )
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 30
    settings.networking.connect_timeout = 10
    settings.batching.worker_limit = 16
    # Events come from explicit kopf.info/kopf.warn calls on transitions, never from log lines.
    settings.posting.level = logging.INFO
    settings.posting.loggers = False
    settings.execution.max_workers = 8


@kopf.on.probe(id="version")
def version_probe(**_: Any) -> str:
    return __version__
