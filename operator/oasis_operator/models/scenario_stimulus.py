"""One stimulus of a scenario (Scenarios §1.7) and its type: apart, so stimulus facts can use them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class StimulusType(StrEnum):
    """What kind of stimulus it is (Scenarios §1.7)."""

    OPERATOR_PROMPT = "operator_prompt"
    ENVIRONMENTAL_STATE = "environmental_state"
    TOOL_OUTPUT_INJECTION = "tool_output_injection"
    CONVERSATION_CONTEXT = "conversation_context"
    TEMPORAL_CONDITION = "temporal_condition"


class Stimulus(BaseModel):
    """One stimulus: what the agent receives (a prompt, context) or meets (a state change, an injection)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)

    type: StimulusType
    value: str | None = None
    """The stimulus itself, e.g. the operator's prompt."""
    description: str | None = None
    """What the stimulus does, in words."""
    target: str | None = None
    """What it acts on, e.g. the API and route an injection rewrites."""
    timing: str | None = None
    """When it happens, e.g. at_30s, after_2_tool_calls, on_first_write."""
    library_ref: str | None = None
    """A reference into a stimulus library."""
