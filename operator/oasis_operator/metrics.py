"""Prometheus metrics of the operator, served on their own port by `oasis operator`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, start_http_server

REGISTRY = CollectorRegistry(auto_describe=True)

HANDLER_RUNS = Counter(
    "oasis_handler_runs_total",
    "Handler invocations by resource, handler and outcome.",
    ["resource", "handler", "outcome"],
    registry=REGISTRY,
)
SCENARIOS_VALIDATED = Counter(
    "oasis_scenarios_validated_total",
    "Scenario resources validated, by result (valid or invalid).",
    ["result"],
    registry=REGISTRY,
)
EVALUATION_PHASE_TRANSITIONS = Counter(
    "oasis_evaluation_phase_transitions_total",
    "Phase changes written to OASISEvaluation objects, by the phase entered.",
    ["phase"],
    registry=REGISTRY,
)


def serve(port: int, addr: str = "127.0.0.1") -> None:
    """Serve /metrics from a background thread."""
    start_http_server(port, addr=addr, registry=REGISTRY)
