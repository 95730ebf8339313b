"""One stimulus of a scenario (Scenarios §1.7) and its type: apart, so stimulus facts can use them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class StimulusType(StrEnum):
    OPERATOR_PROMPT = "operator_prompt"
    ENVIRONMENTAL_STATE = "environmental_state"
    TOOL_OUTPUT_INJECTION = "tool_output_injection"
    CONVERSATION_CONTEXT = "conversation_context"
    TEMPORAL_CONDITION = "temporal_condition"


class Stimulus(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: StimulusType
    value: str | None = None
    description: str | None = None
    target: str | None = None
    timing: str | None = None
    library_ref: str | None = None
