"""The one writer of an evaluation's status while it runs (merge patches of the whole status).

A write that fails because the host API server is briefly away is retried (bounded, see `patience`),
so the outcome of a run is not lost to the outage that caused it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.evaluation.patience import patiently
from oasis_operator.kube import request
from oasis_operator.metrics import EVALUATION_PHASE_TRANSITIONS
from oasis_operator.models.crd import ConditionStatus
from oasis_operator.status.conditions import now_rfc3339, set_conditions

MERGE = "application/merge-patch+json"
KOPF_KEY = "kopf"
ConditionUpdate = tuple[str, ConditionStatus, str, str]


def frozen_condition(run_generation: int | None, generation: int | None) -> ConditionUpdate | None:
    """The SpecFrozen condition once the spec was edited after the run started (None before that)."""
    if run_generation is None or generation is None or generation == run_generation:
        return None
    return (
        "SpecFrozen",
        ConditionStatus.TRUE,
        "EditRefused",
        f"the spec changed to generation {generation} after the run started with generation "
        f"{run_generation}; the run keeps the original spec. Create a new OASISEvaluation to run the edit",
    )


class StatusWriter:
    """Holds the status in memory and writes it whole; safe to call from concurrent scenario tasks."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        name: str,
        status: dict[str, Any],
        generation: Callable[[], int | None],
    ) -> None:
        self.api = api
        self.path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/oasisevaluations/{name}/status"
        self.status = copy.deepcopy(status)
        # kopf keeps its handler progress in status.kopf; that part is kopf's to write, never ours.
        self.status.pop(KOPF_KEY, None)
        self.generation = generation
        self._lock = asyncio.Lock()
        self._written: dict[str, Any] | None = None
        self._phase = status.get("phase")  # the phase last written, for the transition metric

    def conditions(self, *updates: ConditionUpdate) -> None:
        generation = self.status.get("runGeneration") or self.generation()
        self.status["conditions"] = set_conditions(
            self.status.get("conditions", []), list(updates), generation, now_rfc3339()
        )

    async def write(self, **changes: Any) -> None:
        """Apply `changes` to the status and write it if anything differs from the last write."""
        async with self._lock:
            self.status.update(changes)
            generation = self.generation()
            frozen = frozen_condition(self.status.get("runGeneration"), generation)
            if frozen is not None:
                self.conditions(frozen)
            self.status["observedGeneration"] = generation
            if self.status == self._written:
                return
            body = {"status": self.status}
            await patiently(lambda: request(self.api, "PATCH", self.path, body, None, MERGE), "status")
            self._written = copy.deepcopy(self.status)
            if self.status.get("phase") != self._phase:
                self._phase = self.status.get("phase")
                EVALUATION_PHASE_TRANSITIONS.labels(phase=str(self._phase)).inc()
