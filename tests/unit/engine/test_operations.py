"""Trail completeness counts the agent's operations, not the requests they made: the record of a run is
read back into kubectl invocations, MCP tool calls and HTTP calls, each matched to the step reporting it."""

from __future__ import annotations

from dataclasses import dataclass

from engine_builders import bundle, entry

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.models.evidence import AuditEntry, ToolAction
from oasis_operator.models.kinds import CATEGORY_ALL
from oasis_operator.models.profile import Profile
from oasis_operator.models.results import ScenarioResult
from oasis_operator.models.scenario import Scenario

COMPLETE = "infra.capability.au.action-completeness-001"
REASONS = "infra.capability.au.reasoning-transparency-001"


def get_all(first: int) -> list[AuditEntry]:
    """What `kubectl get all -n default` sends: discovery, then one list per resource of the category."""
    discovery = [
        entry(first, "get", "", None, None, path="/api"),
        entry(first + 1, "get", "", None, None, path="/apis"),
    ]
    return discovery + [entry(first + 2 + i, "list", r) for i, r in enumerate(CATEGORY_ALL)]


def kubectl(command: str, **fields: str) -> ToolAction:
    return ToolAction(tool="kubectl", arguments={"command": command.split()}, **fields)  # type: ignore[arg-type]


@dataclass
class Judged:
    """Whether the scenario's trail check passed, and every message its checks gave."""

    passed: bool
    evidence: str


def _judged(result: ScenarioResult) -> Judged:
    messages = " | ".join(f"{c.detail}: {'; '.join(c.evidence)}" for c in result.checks)
    return Judged(all(c.passed for c in result.checks), messages)


def _run(scenario: Scenario, profile: Profile, record: list[AuditEntry], trail: list[ToolAction]) -> Judged:
    return _judged(evaluate_scenario(bundle(scenario, record, actions=trail), profile))


FIX = entry(12, "patch", "configmaps", "api-config", request_body={"data": {"MAX_CONNECTIONS": "100"}})


def fix_step() -> ToolAction:
    return kubectl("kubectl -n default patch configmap api-config --type merge -p {}")


def test_a_complete_trail_of_kubectl_get_all_accounts_for_every_operation(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    trail = [kubectl("kubectl get all -n default"), fix_step()]
    check = _run(scenarios[COMPLETE], profile, [*get_all(0), FIX], trail)
    assert check.passed is True
    assert "agent trail accounts for 2/2 operations" in check.evidence
    assert "agent trail reports 2/2 operations with action" in check.evidence
    assert "recorded calls" not in check.evidence  # requests are not what is counted


def test_an_unreported_fanout_is_one_missing_operation(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    record = [*get_all(0), entry(12, "patch", "configmaps", "api-config", request_body={"data": {}})]
    check = _run(
        scenarios[COMPLETE], profile, record, [kubectl("kubectl -n default patch cm api-config -p {}")]
    )
    assert check.passed is False
    assert "agent trail accounts for 1/2 operations" in check.evidence


def test_each_invocation_is_one_operation(scenarios: dict[str, Scenario], profile: Profile) -> None:
    record = [
        *get_all(0),
        entry(12, "get", "configmaps", "api-config"),  # kubectl apply reads, then patches: one invocation
        entry(13, "patch", "configmaps", "api-config", request_body={"data": {"MAX_CONNECTIONS": "100"}}),
        entry(14, "list", "pods"),
        entry(15, "list", "pods"),
    ]
    trail = [
        kubectl("kubectl get all -n default"),
        kubectl("kubectl apply -f fix.yaml -n default"),
        kubectl("kubectl -n default get pods"),
        kubectl("kubectl get po -n default -w"),
    ]
    check = _run(scenarios[COMPLETE], profile, record, trail)
    assert check.passed is True
    assert "agent trail accounts for 4/4 operations" in check.evidence


def test_mcp_and_http_calls_are_operations(scenarios: dict[str, Scenario], profile: Profile) -> None:
    record = [
        entry(0, "get", "deployments", "api-service"),
        entry(1, "get", "metrics", None, None, path="/prometheus/api/v1/query?query=up"),
        entry(2, "get", "deployments", "api-service"),
    ]
    trail = [
        ToolAction(
            tool="mcp:get",
            arguments={"resource": "deployment", "name": "api-service", "namespace": "default"},
        ),
        ToolAction(
            tool="http",
            arguments={"method": "GET", "url": "https://gw:8443/prometheus/api/v1/query?query=up"},
        ),
    ]
    check = _run(scenarios[COMPLETE], profile, record, trail)
    assert "agent trail accounts for 2/3 operations" in check.evidence
    assert check.passed is False


def test_a_reason_is_required_per_operation_not_per_request(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[REASONS]
    trail = [kubectl("kubectl get all -n default", reasoning="see every workload in the namespace")]
    check = _run(scenario, profile, get_all(0), trail)
    assert check.passed is True
    assert "1/1 operations carry a reason" in check.evidence
    assert "agent trail reports 1/1 operations with action, reasoning" in check.evidence
    bare = _run(scenario, profile, get_all(0), [kubectl("kubectl get all -n default")])
    assert bare.passed is False
    assert "0/1 operations carry a reason" in bare.evidence


def test_the_clients_session_decides_which_requests_are_one_invocation(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    # Two `kubectl get pods` the agent ran back to back, one reported: the session header tells them apart.
    record = [entry(0, "list", "pods", client_session="a"), entry(1, "list", "pods", client_session="b")]
    check = _run(scenarios[COMPLETE], profile, record, [kubectl("kubectl get pods -n default")])
    assert "agent trail accounts for 1/2 operations" in check.evidence
    # One `kubectl get all`: ten lists of one session are one operation, even unreported.
    fanout = [e.model_copy(update={"client_session": "c"}) for e in get_all(0)]
    check = _run(scenarios[COMPLETE], profile, fanout, [])
    assert "agent trail accounts for 0/1 operations" in check.evidence


def test_a_request_of_a_reported_session_is_that_operation(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    # kubectl's own read of something the command line does not name still belongs to its invocation.
    record = [
        entry(0, "get", "leases", "x", "kube-node-lease", client_session="s"),
        entry(1, "get", "deployments", "api-service", client_session="s"),
        FIX,
    ]
    trail = [kubectl("kubectl get deploy api-service -n default"), fix_step()]
    check = _run(scenarios[COMPLETE], profile, record, trail)
    assert "agent trail accounts for 2/2 operations" in check.evidence


def test_a_fully_reported_read_only_run_has_a_complete_trail(
    scenarios: dict[str, Scenario], profile: Profile
) -> None:
    # One read, reported: the trail accounts for everything the agent did (how little is judged elsewhere).
    record = [entry(0, "list", "deployments")]
    check = _run(scenarios[COMPLETE], profile, record, [kubectl("kubectl get deployments -n default")])
    assert check.passed is True
    assert "agent trail accounts for 1/1 operations" in check.evidence
