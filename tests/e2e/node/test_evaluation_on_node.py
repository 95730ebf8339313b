"""An OASISEvaluation applied by a tenant runs to its verdict with the chart's operator on the real node:
the careful reference agent PASSes, the reckless one FAILs, and the tenant fetches the report with
`oasis report get`; and the Job agent adapter runs the careful agent's image as a Job on the node, whose
answer gives the same verdict.

The sandbox is a second local control plane without a real node (the operator's preflight refuses a
sandbox cluster with nodes it did not make, rightly: their kubelets would run scenario pods): the chart's
`sandbox.mode: external` with its kubeconfig in a Secret, reached from the pod at 10.96.0.1:<its port>
(`RealNode.expose`). The agents are the reference agents served on the node's address (the operator
pod calls them there); they reach the gateway at `gateway.externalURL`, the node's address too, where
`kubectl port-forward` (through the API server and the kubelet) forwards to the gateway Service: no
kube-proxy or DNS runs on this node. The sandbox's own audit is not streamed in this mode, so the
verdicts stand on the gateway's record (`incomplete` for the careful run: docs/real-node.md)."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import helm_python as helm
import pytest
import yaml

from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.localcluster.components import REAL_NODE_LABEL
from oasis_operator.localcluster.node import NODE_IP, NODE_NAME, RealNode
from oasis_operator.localcluster.node_files import read_image_list
from tests.cluster_fixtures import KUBECTLS, VENV_BIN, Cluster, stop_process, wait_for
from tests.e2e.node.support import (
    ON_REAL_NODE,
    SCENARIO,
    apply_as,
    create,
    evaluation,
    finished,
    free_port,
    listening,
    operator_image,
    spawn,
    tenant_kubeconfig,
)
from tests.unit.chart.chart_render import CHART, RELEASE

SANDBOX_SECRET = "sandbox-kubeconfig"


@pytest.fixture(scope="module")
def sandbox(node: RealNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalControlPlane]:
    plane = LocalControlPlane(run_dir=tmp_path_factory.mktemp("sandbox-plane"), die_with_parent=True)
    plane.start()
    try:
        state = plane.read_state()
        assert state is not None
        node.expose(state.api_port)
        yield plane
    finally:
        plane.stop()


def _pod_kubeconfig(plane: LocalControlPlane) -> str:
    """The sandbox plane's admin kubeconfig as a pod reaches it: 10.96.0.1:<port>, files embedded."""
    doc = yaml.safe_load(plane.kubeconfig.read_text())
    state = plane.read_state()
    assert state is not None
    cluster = doc["clusters"][0]["cluster"]
    cluster["server"] = f"https://10.96.0.1:{state.api_port}"
    cluster["certificate-authority-data"] = base64.b64encode(
        Path(cluster.pop("certificate-authority")).read_bytes()
    ).decode()
    user = doc["users"][0]["user"]
    for key in ("client-certificate", "client-key"):
        user[f"{key}-data"] = base64.b64encode(Path(user.pop(key)).read_bytes()).decode()
    return yaml.safe_dump(doc)


@dataclass(frozen=True)
class Platform:
    release_namespace: str
    gateway_port: int


@pytest.fixture(scope="module")
def platform(
    node: RealNode, cluster: Cluster, sandbox: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    """The chart installed onto the node with the second plane as its sandbox, its gateway forwarded to
    the node's address. The release namespace is also the agent namespace: its annotations (applied by
    the plane's PodNodeSelector and PodTolerationRestriction) put the Job agents' pods on the node."""
    release_ns = f"oasis-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", release_ns)
    cluster.kubectl(
        "annotate", "namespace", release_ns,
        f"scheduler.alpha.kubernetes.io/node-selector={REAL_NODE_LABEL}=true",
        "scheduler.alpha.kubernetes.io/defaultTolerations="
        + json.dumps([{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]),
    )  # fmt: skip
    gateway_port = free_port(NODE_IP)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SANDBOX_SECRET},
        "stringData": {"kubeconfig": _pod_kubeconfig(sandbox)},
    }
    create(cluster, release_ns, secret)
    repository, tag = operator_image(node).rsplit(":", 1)
    values = {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "operator": {**ON_REAL_NODE},
        "sandbox": {"mode": "external", "kubeconfigSecret": {"name": SANDBOX_SECRET}},
        "gateway": {"externalURL": f"https://{NODE_IP}:{gateway_port}"},
    }
    config = helm.Config(kubeconfig_path=cluster.kubeconfig, namespace=release_ns, storage_driver="secret")
    forward: subprocess.Popen[bytes] | None = None
    try:
        with helm.Chart.load(CHART) as chart:
            assert config.install(chart, RELEASE, values, namespace=release_ns)["status"] == "deployed"
        cluster.kubectl("-n", release_ns, "rollout", "status", "deployment", "--timeout=120s")
        forward = spawn(
            [KUBECTLS["server"], f"--kubeconfig={cluster.kubeconfig}", "-n", release_ns, "port-forward",
             f"--address={NODE_IP}", f"service/{RELEASE}-oasis-operator-gateway", f"{gateway_port}:443"],
            tmp_path_factory.mktemp("port-forward") / "port-forward.log",
        )  # fmt: skip
        wait_for(
            partial(listening, gateway_port), timeout=30, what="the gateway forwarded on the node's address"
        )
        yield Platform(release_ns, gateway_port)
    finally:
        if forward is not None:
            stop_process(forward)
        config.uninstall(RELEASE, ignore_not_found=True)
        config.close()
        cluster.kubectl("delete", "namespace", release_ns, "--wait=false", check=False)


def test_a_tenants_evaluations_run_to_their_verdicts_with_the_charts_operator_on_the_node(
    node: RealNode,
    cluster: Cluster,
    platform: Platform,
    agents: dict[str, int],
    namespace: str,
    tmp_path: Path,
) -> None:
    tenant = tenant_kubeconfig(cluster, namespace, tmp_path)
    for policy, port in agents.items():
        apply_as(
            tenant,
            namespace,
            evaluation(policy, {"http": {"url": f"http://{NODE_IP}:{port}", "timeoutSeconds": 120}}),
        )
    careful = wait_for(
        partial(finished, cluster, namespace, "careful"), timeout=300, interval=2, what="careful's verdict"
    )
    reckless = wait_for(
        partial(finished, cluster, namespace, "reckless"), timeout=300, interval=2, what="reckless's verdict"
    )
    assert (careful["phase"], careful["summary"]["safety"]) == ("Completed", "PASS"), careful.get(
        "conditions"
    )
    assert (reckless["phase"], reckless["summary"]["safety"]) == ("Completed", "FAIL"), reckless.get(
        "conditions"
    )
    assert [(s["id"], s["result"]) for s in careful["scenarios"]] == [(SCENARIO, "PASS")]
    assert [(s["id"], s["result"]) for s in reckless["scenarios"]] == [(SCENARIO, "FAIL")]
    assert careful["agent"]["name"] == "reference-careful"
    # The sandbox was the second plane, reached from the pod.
    assert careful["sandboxServer"].startswith("kube-apiserver v1.37.2")

    # The tenant fetches the verdict with its own credentials.
    report = subprocess.run(
        [str(VENV_BIN / "oasis"), "report", "get", "reckless", "--verdict", f"--kubeconfig={tenant}",
         "-n", namespace],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "safety: FAIL" in report.stdout


def test_the_job_adapter_runs_the_careful_agent_as_a_job_on_the_node_and_gets_its_answer(
    node: RealNode, cluster: Cluster, platform: Platform, namespace: str, tmp_path: Path
) -> None:
    tenant = tenant_kubeconfig(cluster, namespace, tmp_path)
    [image] = [ref for ref, _ in read_image_list(node.image_dir) if ref.startswith("localhost/oasis-agent:")]
    job = {"image": image, "command": ["oasis", "agent", "run", "--policy", "careful"], "timeoutSeconds": 300}
    apply_as(tenant, namespace, evaluation("careful-job", {"job": job}))
    done = wait_for(
        partial(finished, cluster, namespace, "careful-job"),
        timeout=400,
        interval=2,
        what="the Job agent's verdict",
    )
    why = (done["scenarios"], done["summary"]["agentFailures"])
    assert (done["phase"], done["summary"]["safety"]) == ("Completed", "PASS"), why
    assert [(s["id"], s["result"]) for s in done["scenarios"]] == [(SCENARIO, "PASS")]
    assert done["summary"]["agentFailures"]["count"] == 0
    # The answer came from a pod of the agent's Job on the real node. The adapter deletes its Job (and so
    # the pod) once it has read the answer: the namespace's Events tell where the pod ran and that the
    # Job completed.
    events = json.loads(
        cluster.kubectl("-n", platform.release_namespace, "get", "events", "-o", "json").stdout
    )["items"]
    agent_pods = {
        e["involvedObject"]["name"]
        for e in events
        if e["involvedObject"]["kind"] == "Pod"
        and not e["involvedObject"]["name"].startswith(f"{RELEASE}-oasis-operator")
    }
    assert agent_pods, "the Job agent's pod"
    scheduled = [
        e["message"]
        for e in events
        if e["reason"] == "Scheduled" and e["involvedObject"]["name"] in agent_pods
    ]
    assert scheduled
    assert all(m.endswith(f" to {NODE_NAME}") for m in scheduled), scheduled
    assert any(e["involvedObject"]["kind"] == "Job" and e["reason"] == "Completed" for e in events)
