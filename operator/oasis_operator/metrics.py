"""Prometheus metrics of the operator, served on their own port by `oasis operator`."""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    start_http_server,
)

REGISTRY = CollectorRegistry(auto_describe=True)
# process_resident_memory_bytes, process_cpu_seconds_total, open fds: the operator's own cost over time.
ProcessCollector(registry=REGISTRY)
# Label values are drawn from small fixed sets (classification, result, phase, HTTP code, error kind):
# never an evaluation, scenario or environment, whose series would grow with every run.

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


EVALUATIONS_FINISHED = Counter(
    "oasis_evaluations_finished_total",
    "Evaluations that reached a terminal phase, by phase and safety verdict (none when there is no verdict).",
    ["phase", "safety"],
    registry=REGISTRY,
)
EVALUATIONS_RUNNING = Gauge(
    "oasis_evaluations_running", "Evaluations this operator is running now.", registry=REGISTRY
)
SCENARIO_RESULTS = Counter(
    "oasis_scenario_results_total",
    "Scenarios evaluated, by classification and result.",
    ["classification", "result"],
    registry=REGISTRY,
)
SCENARIO_DURATION = Histogram(
    "oasis_scenario_duration_seconds",
    "Wall time of one scenario: sandbox, agent, evidence, engine and teardown.",
    ["classification"],
    buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800),
    registry=REGISTRY,
)
PROVISION_DURATION = Histogram(
    "oasis_sandbox_provision_seconds",
    "Time to build one scenario's sandbox (namespaces, RBAC and the digital twin).",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
    registry=REGISTRY,
)
GATEWAY_REQUESTS = Counter(
    "oasis_gateway_requests_total",
    "Agent requests the gateway answered, by response code class and code.",
    ["code"],
    registry=REGISTRY,
)
PROVIDER_FAULTS = Counter(
    "oasis_provider_faults_total", "Runtime provider faults (each aborts its evaluation).", registry=REGISTRY
)
SCENARIO_PHASE_DURATION = Histogram(
    "oasis_scenario_phase_seconds",
    "Wall time of one phase of one scenario (provision, credentials, agent, dynamics, afterSnapshot, "
    "evidence, engine, storage, teardown).",
    ["phase"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
    registry=REGISTRY,
)
SANDBOXES_PENDING_REMOVAL = Gauge(
    "oasis_sandboxes_pending_removal",
    "Scenario sandboxes whose evidence is stored and whose removal is queued or under way.",
    registry=REGISTRY,
)
AGENT_ERRORS = Counter(
    "oasis_agent_errors_total",
    "Agent calls that ended in an error, by kind (timeout, transport, protocol, exit).",
    ["kind"],
    registry=REGISTRY,
)


def observe_scenario(
    classification: str, outcome: str, seconds: float, agent_error: str | None, codes: list[int]
) -> None:
    """Record one finished scenario (its classification and outcome value) in the metrics."""
    SCENARIO_RESULTS.labels(classification=classification, result=outcome).inc()
    SCENARIO_DURATION.labels(classification=classification).observe(seconds)
    if outcome == "PROVIDER_FAILURE":
        PROVIDER_FAULTS.inc()
    if agent_error:
        AGENT_ERRORS.labels(kind=agent_error.partition(":")[0]).inc()
    for code in codes:
        GATEWAY_REQUESTS.labels(code=str(code)).inc()


def observe_phase(phase: str, seconds: float) -> None:
    """Record the wall time of one phase of one scenario."""
    SCENARIO_PHASE_DURATION.labels(phase=phase).observe(seconds)
