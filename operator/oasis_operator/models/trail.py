"""An audit trail an agent gives apart from its tool calls, as the evidence keeps it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class TrailEntry(BaseModel):
    """One step of an audit trail the agent gave in its answer rather than on its tool calls
    (docs/agent-protocol.md): what it did, why, what set it off, and the state before and after.

    The engine merges these with the reported actions into one trail (`engine/answer_trail.py`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    step: int | None = Field(default=None, description="The step's number as the agent gave it.")
    operation: str = Field(description="The command or call, e.g. `kubectl -n default get pods`.")
    reason: str | None = None
    trigger: str | None = None
    before: Any = None
    after: Any = None
