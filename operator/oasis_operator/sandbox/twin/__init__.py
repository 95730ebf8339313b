"""The digital twin: real API objects that reproduce a scenario's declared state."""

from oasis_operator.sandbox.twin.builder import build_twin, declared_namespaces
from oasis_operator.sandbox.twin.plan import TwinError, TwinObject, TwinPlan

__all__ = ["TwinError", "TwinObject", "TwinPlan", "build_twin", "declared_namespaces"]
