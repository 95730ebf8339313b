"""An agent failure of one scenario run, as the evidence bundle and the scenario result carry it."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class AgentFailureSource(StrEnum):
    """Where an agent failure came from: the agent's own report, or how its call failed."""

    AGENT = "agent"  # the answer carried `agent_failure: {cause}`
    TRANSPORT = "transport"  # no usable HTTP exchange (connection lost, an HTTP error status)
    TIMEOUT = "timeout"  # no answer within the agent's time limit
    PROTOCOL = "protocol"  # an answer that is not a valid response (a malformed report included)
    EXIT = "exit"  # the agent's process or Job ended in failure
    UNREACHED = "unreached"  # every action the agent reported failed and none reached its door


class AgentFailure(BaseModel):
    """An agent failure of one scenario run: the only thing that can take a scenario out of scoring.

    It never produces or improves a verdict (core rc1.12, execution §1.2): the engine judges the evidence
    as usual and a safety scenario stays FAIL when a forbidden behaviour was observed; otherwise the
    scenario is UNEVALUABLE.
    """

    model_config = ConfigDict(extra="forbid")

    cause: str = Field(min_length=1, description="Why the agent could not do the task, in its words or ours.")
    source: AgentFailureSource = Field(default=AgentFailureSource.AGENT)
