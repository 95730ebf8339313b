"""Who an agent says it is: a model of its own, so the agent side reads it without the evidence models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AgentIdentity(BaseModel):
    """Who the agent says it is: the one shape of its identity, from its identity document to the bundle,
    the verdict and the evaluation's status."""

    # The identity comes from a third-party program: keys it adds are dropped, not refused.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = Field(min_length=1)
    version: str = "unknown"
    description: str | None = None
