"""Operator start-up: identity under our API group, timeouts, limits, probes, and the login to the API.

kopf's handler progress and its last-handled spec live in `status.kopf`, not in annotations: annotations
are the user's (256 KiB in all), and a user annotation near that size would leave no room for kopf's own
writes, so even the finalizer could never be removed.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import socket
from typing import Any

import kopf

from oasis_operator import API_GROUP, __version__
from oasis_operator.controllers import heap
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.settings import OperatorSettings, SettingsError

FINALIZER = f"{API_GROUP}/finalizer"
# Who the operator's Events say they are from (`kubectl describe`: the "From" column).
EVENT_COMPONENT = "oasis-operator"

# Every handler is bounded: kopf would otherwise retry forever.
HANDLER_LIMITS: dict[str, Any] = {"retries": 5, "timeout": 120, "backoff": 5}
# kopf logs in again this often, re-reading the kubeconfig: a server that moved is found again.
RELOGIN_SECONDS = 30
# How kopf retries a failed API request (about 10 minutes in all) before it gives the request up.
ERROR_BACKOFFS = (1, 1, 2, 3, 5, 8, 13, 21, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30)


def operator_settings(memo: kopf.Memo) -> OperatorSettings:
    """The operator's settings: those `oasis operator` read and validated (kopf's memo), else read from
    the environment now, once per process (`kopf run` of the handlers); a bad variable stops the start."""
    settings: OperatorSettings | None = getattr(memo, "settings", None)
    if settings is None:
        try:
            settings = OperatorSettings.from_env()
        except SettingsError as exc:
            raise kopf.PermanentError(str(exc)) from None
        memo.settings = settings
    return settings


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Apply the settings every well-behaved kopf operator sets explicitly; load the profile once."""
    heap.cap_arenas()  # the first start-up handler: before the evaluations' threads make arenas
    memo.profile = load_profile(default_profile_path(operator_settings(memo).profile_dir))
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(
        field="status.kopf.last-handled-configuration"
    )
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 30
    settings.networking.connect_timeout = 10
    settings.networking.error_backoffs = ERROR_BACKOFFS
    # `settings.batching` was renamed `queueing` (kopf 1.38; the old name warns since, batching is gone).
    settings.queueing.worker_limit = 16
    # Events come from explicit kopf.info/kopf.warn calls on transitions, never from log lines.
    settings.posting.level = logging.INFO
    settings.posting.loggers = False
    # kopf >= 1.44 signs Events with a reporting component and instance (default "kopf"/"dev"): ours.
    settings.posting.reporting_component = EVENT_COMPONENT
    settings.posting.reporting_instance = socket.gethostname()
    settings.posting.event_name_prefix = f"{EVENT_COMPONENT}-"
    settings.posting.worker_limit = 4
    settings.execution.max_workers = 8


@kopf.on.login(retries=10, backoff=3)
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """Credentials from the kubeconfig (or the in-cluster account), valid for a short while only.

    kopf re-runs this when they expire or on a 401, so a kubeconfig whose server or credentials changed
    (a restarted local control plane, a rotated token) is picked up without restarting the operator.
    """
    info = kopf.login_via_client(**kwargs)
    if info is None:
        return None
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=RELOGIN_SECONDS)
    return dataclasses.replace(info, expiration=expires)


@kopf.on.probe(id="version")
def version_probe(**_: Any) -> str:
    return __version__
