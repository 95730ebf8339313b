"""`helm upgrade` while an evaluation runs: the upgrade changes a value, so the operator's Deployment (its
pod template carries a checksum of the values; strategy Recreate) replaces the operator pod in the middle
of two evaluations' runs. The new pod resumes each from its status and its ConfigMaps: the finished runs
are kept, the runs in flight are cleaned up and run again, and the verdicts are those undisturbed runs give:
the careful agent's every run PASS, the reckless agent's every run FAIL. The reckless runs after the
upgrade FAIL only if the agent reached the sandbox through the new pod's gateway (a careful agent that
reaches nothing would still PASS). The upgrade leaves the sandbox control plane's pods as they were, and
no sandbox is left in it afterwards.

Runs on the chart's own sandbox control plane on the real node (tests/e2e/node/controlplane.py).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import helm_python as helm

from oasis_operator.localcluster.node import NODE_IP
from tests.cluster_fixtures import Cluster, wait_for
from tests.e2e.node.controlplane import COMPONENTS, Platform
from tests.e2e.node.support import SCENARIO, apply_as, evaluation, finished, tenant_kubeconfig
from tests.unit.chart.chart_render import CHART, RELEASE

REPETITIONS = 8  # runs of one scenario, ~3 s each, two evaluations at once: they outlast the replacement
EXPECTED = {"careful": ("PASS", "P"), "reckless": ("FAIL", "F")}
UPGRADED = {"oasis.evaluation.dev/test-upgrade": "1"}


def _status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("-n", namespace, "get", "oasisevaluation", name, "-o", "json").stdout
    status: dict[str, Any] = json.loads(out).get("status") or {}
    return status


def _uids(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["uid"] for p in pods}


def _leftover_sandboxes(cluster: Cluster, platform: Platform) -> list[str]:
    """Sandbox namespaces and twin Nodes still in the sandbox plane (its shared control namespace aside)."""
    namespaces = json.loads(platform.sandbox_kubectl(cluster, "get", "namespaces", "-o", "json").stdout)
    nodes = json.loads(platform.sandbox_kubectl(cluster, "get", "nodes", "-o", "json").stdout)
    names = [n["metadata"]["name"] for n in namespaces["items"]]
    return [n for n in names if n.startswith("sbx-") and n != "sbx-control"] + [
        f"node/{n['metadata']['name']}" for n in nodes["items"]
    ]


# A run started by the new pod before its gateway is reachable at the door the agent is given (the Service
# follows the pod once it is Ready; here the test's port-forward, restarted when the old pod's ends) is one
# whose agent cannot act: its actions all fail and the door records none. Seen once (reckless FFPFFFFF,
# before the `unreached` agent failure existed): it scored PASS. Now such a run is UNEVALUABLE ("U") with
# an agent failure of source `unreached`; what must never happen is the opposite verdict.
def test_helm_upgrade_during_evaluations_replaces_the_operator_and_the_runs_resume_to_their_verdicts(
    cluster: Cluster, controlplane: Platform, agents: dict[str, int], namespace: str, tmp_path: Path
) -> None:
    ns = controlplane.release_namespace
    [old_operator] = controlplane.pods(cluster, "operator")
    sandbox_pods = {c: _uids(controlplane.pods(cluster, c)) for c in COMPONENTS}
    tenant = tenant_kubeconfig(cluster, namespace, tmp_path)
    for policy in EXPECTED:
        agent = {"http": {"url": f"http://{NODE_IP}:{agents[policy]}", "timeoutSeconds": 120}}
        manifest = evaluation(policy, agent)
        manifest["spec"]["repetitions"] = REPETITIONS
        apply_as(tenant, namespace, manifest)

    def under_way() -> bool:
        done = [(_status(cluster, namespace, p).get("progress") or {}).get("done", 0) for p in EXPECTED]
        return min(done) >= 2

    wait_for(under_way, timeout=120, interval=0.5, what="two runs of each evaluation done")

    values = {
        **controlplane.values,
        "operator": {**controlplane.values["operator"], "podAnnotations": UPGRADED},
    }
    with helm.Chart.load(CHART) as chart:
        upgraded = controlplane.config.upgrade(chart, RELEASE, values, namespace=ns)
    assert upgraded["status"] == "deployed", upgraded
    # Helm's record of the second revision (its storage driver: Secrets).
    cluster.kubectl("-n", ns, "get", "secret", f"sh.helm.release.v1.{RELEASE}.v2")
    cluster.kubectl("-n", ns, "rollout", "status", "deployment", "--timeout=180s")
    [new_operator] = controlplane.pods(cluster, "operator")
    assert new_operator["metadata"]["uid"] != old_operator["metadata"]["uid"]
    assert new_operator["metadata"]["annotations"]["oasis.evaluation.dev/test-upgrade"] == "1"
    # The old operator stopped while the evaluations were under way: the new one has them to finish.
    during = {p: _status(cluster, namespace, p) for p in EXPECTED}
    for policy, status in during.items():
        assert status.get("phase") not in ("Completed", "Failed", "Aborted"), (policy, status.get("progress"))
    print("runs done when the new operator was ready:", {p: s["progress"]["done"] for p, s in during.items()})

    for policy, (verdict, letter) in EXPECTED.items():
        done = wait_for(
            partial(finished, cluster, namespace, policy), timeout=400, interval=2, what=f"{policy}'s verdict"
        )
        [row] = done["scenarios"]
        runs = row["runs"]
        assert (row["id"], len(runs)) == (SCENARIO, REPETITIONS), row
        assert set(runs) <= {letter, "U"}, row  # never the opposite verdict, never a silent one
        assert (done["progress"]["done"], done["progress"]["total"]) == (REPETITIONS, REPETITIONS)
        failures = done["summary"]["agentFailures"]
        assert failures["count"] == runs.count("U"), failures
        for failure in failures["scenarios"]:
            assert "never reached the sandbox" in failure["cause"], failure
        if "U" not in runs:
            outcome = (done["phase"], done["summary"]["safety"], row["result"])
            assert outcome == ("Completed", verdict, verdict), done.get("conditions")
        elif verdict == "FAIL":  # a forbidden behaviour observed in the other runs: the verdict stands
            assert (done["phase"], done["summary"]["safety"]) == ("Completed", "FAIL"), done.get("conditions")
        else:  # a PASS needs every run: a run the agent could not act in withholds it
            assert done["summary"]["safety"] != "PASS", done["summary"]
        print(policy, "runs:", runs)
    # The gateway's forward followed the new pod (kubectl port-forward ends with its pod).
    assert controlplane.forward.starts >= 2
    # The upgrade changed nothing of the sandbox control plane: the same pods run.
    assert {c: _uids(controlplane.pods(cluster, c)) for c in COMPONENTS} == sandbox_pods
    # No sandbox is left in the sandbox plane, the interrupted run's included.
    wait_for(lambda: not _leftover_sandboxes(cluster, controlplane), timeout=120, interval=2,
             what="no sandbox left in the sandbox plane")  # fmt: skip
