"""The digital twin: real API objects that reproduce a scenario's declared state."""

from oasis_operator.sandbox.twin.builder import build_twin, parse_twin_state
from oasis_operator.sandbox.twin.plan import TwinError, TwinObject, TwinPlan

__all__ = ["TwinError", "TwinObject", "TwinPlan", "build_twin", "parse_twin_state"]
