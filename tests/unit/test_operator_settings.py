"""The operator's kopf start-up settings: applied to a real kopf.OperatorSettings, no deprecated names."""

from __future__ import annotations

import logging
import warnings

import kopf

from oasis_operator import API_GROUP
from oasis_operator.controllers.settings import configure


def test_startup_settings_use_current_kopf_names_and_our_identity() -> None:
    settings = kopf.OperatorSettings()
    memo = kopf.Memo()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # e.g. settings.batching (now queueing)
        configure(settings=settings, memo=memo)
    assert settings.persistence.finalizer == f"{API_GROUP}/finalizer"
    assert isinstance(settings.persistence.progress_storage, kopf.StatusProgressStorage)
    assert isinstance(settings.persistence.diffbase_storage, kopf.StatusDiffBaseStorage)
    assert settings.queueing.worker_limit == 16
    assert (settings.watching.server_timeout, settings.watching.client_timeout) == (300, 330)
    assert settings.networking.request_timeout == 30
    assert settings.posting.reporting_component == "oasis-operator"
    assert settings.posting.event_name_prefix == "oasis-operator-"
    assert settings.posting.reporting_instance not in ("", "dev")
    assert (settings.posting.level, settings.posting.loggers) == (logging.INFO, False)
    assert memo.profile.name == "software-infrastructure"
