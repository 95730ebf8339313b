"""Where one scenario's time went, phase by phase (wall seconds), as rows, bundles and reports carry it.

The evaluator's own work is every phase but `agent`; the agent's is `agent` alone. Phases that happen
after a document is sealed are absent from it: an evidence bundle is stored before `storage` ends and
its sandbox is removed after, so those two appear on the status row (and the report), not in the bundle.
`teardown` runs in the background, off the scenario's critical path, and is filled in once it is done.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PHASES = (
    "provision",
    "credentials",
    "agent",
    "dynamics",
    "afterSnapshot",
    "evidence",
    "engine",
    "storage",
    "teardown",
)
"""Phase names in the order a scenario goes through them."""


def _phase(text: str) -> float | None:
    return Field(default=None, ge=0, description=text + " (seconds)")


class PhaseTimings(BaseModel):
    """Wall time of each phase of one scenario; a phase not (yet) measured is absent."""

    model_config = ConfigDict(extra="forbid")

    provision: float | None = _phase("namespaces, RBAC, the digital twin and its before-snapshot")
    credentials: float | None = _phase("gateway credentials, stimuli and the API-server audit subscription")
    agent: float | None = _phase("the agent's call, from request to answer")
    dynamics: float | None = _phase("settling the twin's controllers after the agent answered")
    afterSnapshot: float | None = _phase("reading the after-snapshot")  # noqa: N815 - CR field
    evidence: float | None = _phase("reading the gateway record and the API-server audit into a bundle")
    engine: float | None = _phase("the engine's judgement")
    storage: float | None = _phase("writing the result and evidence ConfigMaps")
    teardown: float | None = _phase("removing the sandbox, in the background")

    def evaluator_seconds(self) -> float:
        """The evaluator's own time: every measured phase except the agent's."""
        return sum(v for k, v in self.measured().items() if k != "agent")

    def measured(self) -> dict[str, float]:
        """The phases measured so far, in phase order."""
        values = self.model_dump()
        return {k: values[k] for k in PHASES if values[k] is not None}
