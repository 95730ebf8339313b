"""Attack tests: every escape attempt an agent might make is refused, recorded and changes nothing.

Parametrized over the one probe list that `oasis containment probe` runs (docs/containment.md). Each
attempt is made as the agent would: its own process, the command adapter's scrubbed environment and
only the agent's kubeconfig, against the real local API server and a real provisioned sandbox.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from oasis_operator.containment.acts import SKIPPED, attempt, kubectl, with_token
from oasis_operator.containment.harness import ContainmentHarness
from oasis_operator.containment.probes import HOST_PROBES, PROBES, Probe
from oasis_operator.gateway.ratelimit import RateLimit, TokenBucket

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_escape_attempt_is_contained(harness: ContainmentHarness, probe: Probe) -> None:
    if harness.target.etcd_ports is None and probe.id in {"etcd-client-port", "etcd-peer-port"}:
        pytest.skip("the control plane under test is not a local plane with a state file")
    result = harness.run(probe)
    assert result.observation.outcome != SKIPPED
    assert result.observation.outcome in probe.expected, result.observation.detail
    assert result.record_ok, result.recorded
    assert result.changes == (), result.changes
    assert result.verdict == "contained"


def test_the_agent_process_holds_no_credential_but_its_kubeconfig(harness: ContainmentHarness) -> None:
    environ = harness.target.agent.env
    assert set(environ) <= {
        "PATH",
        "LANG",
        "LC_ALL",
        "TZ",
        "HOME",
        "TMPDIR",
        "OASIS_REQUEST",
        "KUBECONFIG",
    } | {k for k in environ if k.startswith("OASIS_ENDPOINT_")}
    assert environ["KUBECONFIG"] == "/home/agent/kubeconfig"  # as the sandboxed agent sees it
    kubeconfig = (harness.work_dir / "agents" / "agent" / "home" / "kubeconfig").read_text()
    assert harness.target.apiserver not in kubeconfig
    assert f"server: {harness.target.server}" in kubeconfig


def test_a_burst_is_answered_429_with_a_kubernetes_status_and_retry_after(
    harness: ContainmentHarness,
) -> None:
    target = harness.target
    spec = {"kind": "http", "url": f"{target.server}/version", "repeat": 1000, "until": 429}
    answer = attempt(target, {**spec, "headers": with_token(target.token)})
    assert answer["codes"][-1] == 429
    assert set(answer["codes"][:-1]) == {200}
    assert answer["headers"]["retry-after"] == "1"
    status = json.loads(answer["body"])
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "TooManyRequests", 429)
    assert "50 requests per second, bursts of 100" in status["message"]
    assert status["details"]["retryAfterSeconds"] == 1
    time.sleep(2.5)  # leave the bucket full for whatever runs next


def test_kubectl_waits_out_a_429_and_then_gets_its_answer(harness: ContainmentHarness) -> None:
    """The limit does not break kubectl: client-go retries a 429 after its Retry-After."""
    assert harness.gateway is not None
    state = harness.gateway.state(harness.env.id)
    warm = kubectl(harness.target, "get", "configmaps", "-o", "name")  # discovery, cached from now on
    assert warm.returncode == 0, warm.stderr
    default = state.limiter
    state.limiter = TokenBucket(RateLimit(rate=1, burst=1))
    try:
        while state.limiter.take() == 0.0:
            pass  # empty the bucket: the next request is over the limit
        mark = max(e.seq for e in harness.gateway.audit_entries(harness.env.id))
        listed = kubectl(harness.target, "get", "configmaps", "-o", "name")
    finally:
        state.limiter = default
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == warm.stdout
    after = [e for e in harness.gateway.audit_entries(harness.env.id) if e.seq > mark]
    assert [(e.resource, e.response_code) for e in after] == [("configmaps", 429), ("configmaps", 200)]


@pytest.mark.parametrize("probe", [p for p in HOST_PROBES if p.id != "port-scan"], ids=lambda p: p.id)
def test_without_the_sandbox_the_host_probes_get_through(
    unsandboxed: ContainmentHarness, probe: Probe
) -> None:
    """The probes can fail: run as the operator's own user with its whole view, each one gets something."""
    result = unsandboxed.run(probe)
    assert result.observation.outcome.startswith("got: "), result.observation
    assert result.verdict == "ESCAPED"


def test_the_sandboxed_agent_sees_only_its_own_processes_as_an_unprivileged_user(
    harness: ContainmentHarness,
) -> None:
    target = harness.target
    script = "import os; print(os.getuid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    seen = target.agent.run([target.python, "-I", "-c", script], None, 60)
    assert seen.returncode == 0, seen.stderr
    uid, pids = seen.stdout.split(" ", 1)
    assert int(uid) != 0 if os.geteuid() == 0 else int(uid) == os.geteuid()
    assert json.loads(pids) == [1, 2]  # bwrap's init and the agent itself


def test_a_record_changed_behind_the_gateways_back_is_unreachable(harness: ContainmentHarness) -> None:
    """The agent cannot reach its record (gateway-data); were it changed anyway, it is not trusted."""
    assert harness.gateway is not None
    env_id = harness.env.id
    assert kubectl(harness.target, "get", "secrets", "-n", "kube-system").returncode != 0  # a 403 line
    assert harness.gateway.evidence(env_id).available
    record = harness.gateway.state(env_id).recorder.path
    original = record.read_text()
    try:
        assert '"response_code":403' in original
        record.write_text(original.replace('"response_code":403', '"response_code":200', 1))
        evidence = harness.gateway.evidence(env_id)
        assert not evidence.available
        assert "not intact" in evidence.reason
    finally:
        record.write_text(original)
    assert harness.gateway.evidence(env_id).available
